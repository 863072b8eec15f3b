//! A cassette being played (`onair serve --replay`): which recorded
//! connection and answer come next, what had no answer, and the body of a
//! replayed stream. The playing itself is [`crate::replay`]'s.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

use crate::cassette::Cassette;

/// A cassette being played.
#[derive(Debug)]
pub struct Replay {
    pub(crate) cassette: Arc<Cassette>,
    speed: f64,
    strict: bool,
    state: Mutex<State>,
    /// Recorded connections played to their end (or closed by the bot).
    pub(crate) finished: Arc<std::sync::atomic::AtomicUsize>,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) next_conn: usize,
    pub(crate) live_id: Option<u64>,
    pub(crate) rest_next: HashMap<String, usize>,
    pub(crate) unrecorded: Vec<String>,
}

impl Replay {
    /// Plays `cassette` with its times divided by `speed` (0: no waiting).
    pub fn new(cassette: Cassette, speed: f64, strict: bool) -> Self {
        Self {
            cassette: Arc::new(cassette),
            speed,
            strict,
            state: Mutex::new(State::default()),
            finished: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        }
    }

    /// (recorded connections played to their end, recorded connections).
    /// The replay is done when the two are equal: `GET /_emulator/scenario`
    /// shows it as the scenario `replay`.
    pub fn progress(&self) -> (usize, usize) {
        (
            self.finished.load(std::sync::atomic::Ordering::Acquire),
            self.cassette.connections.len(),
        )
    }

    /// Whether `--strict` was asked for.
    pub fn strict(&self) -> bool {
        self.strict
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Each request the cassette had no answer for, as a line naming it.
    pub fn unrecorded(&self) -> Vec<String> {
        self.lock().unrecorded.clone()
    }

    /// Stream connections served so far.
    pub fn connections_served(&self) -> usize {
        self.lock().next_conn
    }

    /// Remembers a request the cassette had no answer for.
    pub(crate) fn push_unrecorded(&self, line: String) {
        self.lock().unrecorded.push(line);
    }

    pub(crate) fn delay(&self, ms: u64) -> Duration {
        if self.speed <= 0.0 {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(ms as f64 / 1000.0 / self.speed)
    }
}

/// The body of a replayed stream: what its task hands over, an error
/// aborting the connection (a recorded drop).
#[derive(Debug)]
pub struct ReplayBody {
    pub(crate) rx: mpsc::Receiver<io::Result<Bytes>>,
}

impl Body for ReplayBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(Ok(b))) => Poll::Ready(Some(Ok(Frame::data(b)))),
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
