//! The threads users' engine sessions run on. Each session lives on one thread, as a
//! person's does in the single-user host (its turn's model request, calls and store writes
//! hand the work to each other in turn, with no wake-up of another thread between): a small
//! pool of single-threaded runtimes, each with a `LocalSet`, a user always on the same one
//! (by a hash of the user id). Everything else of the service (HTTP,
//! the database, event delivery) runs on the main runtime and talks to a session through
//! its channels.

use std::future::Future;
use std::hash::{Hash, Hasher};
use std::pin::Pin;
use tokio::sync::mpsc;

/// Work for a worker thread: made on the caller's side, run there.
pub type Job = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()>>> + Send>;

pub struct Workers {
    queues: Vec<mpsc::UnboundedSender<Job>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Workers {
    pub fn start(count: usize) -> std::io::Result<Self> {
        let mut queues = Vec::new();
        let mut threads = Vec::new();
        for i in 0..count.max(1) {
            let (tx, mut rx) = mpsc::unbounded_channel::<Job>();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let thread = std::thread::Builder::new()
                .name(format!("mcp-host-sessions-{i}"))
                .spawn(move || {
                    let local = tokio::task::LocalSet::new();
                    local.block_on(&runtime, async move {
                        while let Some(job) = rx.recv().await {
                            tokio::task::spawn_local(job());
                        }
                    });
                    // The queue closed (the service is stopping): what is left runs to its end.
                    runtime.block_on(local);
                })?;
            queues.push(tx);
            threads.push(thread);
        }
        Ok(Self { queues, threads })
    }

    /// Runs `job` on `key`'s thread; `false` when the pool has stopped.
    pub fn run(&self, key: &str, job: Job) -> bool {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        let i = (h.finish() % self.queues.len() as u64) as usize;
        self.queues[i].send(job).is_ok()
    }

    /// Closes the queues and waits for every thread's sessions to end.
    pub fn stop(self) {
        drop(self.queues);
        for t in self.threads {
            // A panicked session thread has nothing more to give back.
            let _ = t.join();
        }
    }
}
