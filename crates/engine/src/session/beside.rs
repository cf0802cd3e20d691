//! Work a session runs beside its loop (a turn, a person's direct call, a rebuild of the
//! published tool list), each as its own task, so it goes on while the loop awaits an
//! operation. The loop used to poll them only between operations, so an operation that
//! waited on something one of them held waited forever: a person's `/call` typed while the
//! tool list was being rebuilt asked for the catalogue the rebuild had locked across its
//! pin-store reads, and the chat hung (seen in the terminal test on a loaded machine).
//! Dropping the work aborts its task, as dropping the future used to cancel it.

use std::future::Future;
use std::pin::Pin;
use tokio::task::JoinHandle;

/// `work`, started now as a task of its own; the returned future yields its output.
pub(super) fn beside<T: Send + 'static>(
    work: impl Future<Output = T> + Send + 'static,
) -> Pin<Box<dyn Future<Output = T> + Send>> {
    let mut task = Aborting(tokio::spawn(work));
    Box::pin(async move {
        match (&mut task.0).await {
            Ok(output) => output,
            // The work's panic is the session's, as when the loop polled it itself.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Cancelled only by `Aborting`'s drop, or by the runtime shutting down: nobody
            // is left to take an output.
            Err(_) => std::future::pending().await,
        }
    })
}

/// Aborts the task when dropped.
struct Aborting<T>(JoinHandle<T>);

impl<T> Drop for Aborting<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;
    use tokio::sync::{Mutex, oneshot};

    /// Work that holds a lock across an await lets go of it while nobody polls it: an
    /// operation that needs the lock gets it.
    #[tokio::test(start_paused = true)]
    async fn work_goes_on_while_the_loop_awaits_something_else() {
        let lock = Arc::new(Mutex::new(()));
        let (held_tx, held) = oneshot::channel();
        let work = beside({
            let lock = lock.clone();
            async move {
                let _guard = lock.lock().await;
                let _ = held_tx.send(());
                tokio::task::yield_now().await;
                7
            }
        });
        let started = tokio::time::timeout(Duration::from_secs(60), held).await;
        assert!(started.is_ok(), "the work did not start until polled");
        // `work` is not polled here, as a loop's branch is not while it awaits an operation.
        let got = tokio::time::timeout(Duration::from_secs(60), lock.lock()).await;
        assert!(got.is_ok(), "the work kept the lock while nobody polled it");
        drop(got);
        assert_eq!(work.await, 7);
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_work_aborts_it() {
        let (tx, rx) = oneshot::channel::<()>();
        let work = beside(async move {
            std::future::pending::<()>().await;
            drop(tx);
        });
        tokio::task::yield_now().await;
        drop(work);
        // The task's future (and the sender it owns) is dropped by the abort.
        assert!(rx.await.is_err());
    }
}
