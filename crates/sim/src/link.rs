//! The pipe between the host and a simulated server, with the faults a stdio stream can
//! have. A byte stream cannot reorder, so each direction is one ordered task; per line it
//! may pass it, delay it (holding back what follows), drop it, send it twice, cut it short,
//! corrupt a byte of it, close the connection, or go silent while keeping it open.

use rand::Rng;
use rand::rngs::StdRng;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// How often each fault happens, per line (the rest pass untouched).
#[derive(Clone, Copy, Debug, Default)]
pub struct Faults {
    pub delay: f64,
    pub drop: f64,
    pub duplicate: f64,
    pub truncate: f64,
    pub corrupt: f64,
    pub close: f64,
    pub hang: f64,
}

impl Faults {
    pub fn none() -> Self {
        Self::default()
    }

    /// Every fault at `rate`, closing and hanging rarer (each ends the connection).
    pub fn all(rate: f64) -> Self {
        Self {
            delay: rate * 2.0,
            drop: rate,
            duplicate: rate,
            truncate: rate,
            corrupt: rate,
            close: rate / 4.0,
            hang: rate / 4.0,
        }
    }
}

enum Fate {
    Pass,
    Delay(Duration),
    Drop,
    Duplicate,
    Truncate(usize),
    Corrupt(usize),
    Close,
    Hang,
}

fn fate(rng: &mut StdRng, f: &Faults, len: usize) -> Fate {
    let chances = [
        f.delay,
        f.drop,
        f.duplicate,
        f.truncate,
        f.corrupt,
        f.close,
        f.hang,
    ];
    match crate::pick(rng, &chances) {
        Some(0) => Fate::Delay(Duration::from_millis(rng.random_range(1..3000))),
        Some(1) => Fate::Drop,
        Some(2) => Fate::Duplicate,
        Some(3) => Fate::Truncate(rng.random_range(0..len.max(1))),
        Some(4) => Fate::Corrupt(rng.random_range(0..len.max(1))),
        Some(5) => Fate::Close,
        Some(6) => Fate::Hang,
        _ => Fate::Pass,
    }
}

/// Carries lines from `from` to `to` with `faults`, until either end closes.
pub async fn carry(from: DuplexStream, mut to: DuplexStream, faults: Faults, mut rng: StdRng) {
    let mut lines = BufReader::new(from).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut bytes = line.into_bytes();
        let copies = match fate(&mut rng, &faults, bytes.len()) {
            Fate::Pass => 1,
            Fate::Delay(d) => {
                tokio::time::sleep(d).await;
                1
            }
            Fate::Drop => 0,
            Fate::Duplicate => 2,
            Fate::Truncate(at) => {
                bytes.truncate(at);
                1
            }
            Fate::Corrupt(at) => {
                // A control character is invalid anywhere in JSON, so the damage is always
                // detectable; a corruption that makes another valid message (a changed
                // nonce) no client could tell from the server's own words.
                if let Some(b) = bytes.get_mut(at) {
                    *b = 0x01;
                }
                1
            }
            Fate::Close => return,
            Fate::Hang => {
                // Silent from here on, but open: drains what comes so the writer never
                // blocks, and ends only when the writer closes.
                while let Ok(Some(_)) = lines.next_line().await {}
                return;
            }
        };
        bytes.push(b'\n');
        for _ in 0..copies {
            if to.write_all(&bytes).await.is_err() {
                return;
            }
        }
    }
}
