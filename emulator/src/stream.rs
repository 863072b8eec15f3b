//! The event stream's fan-out and writer (spec 4.6).
//!
//! Each event is serialized once into a [`Frame`] (`Bytes` inside an `Arc`)
//! and queued to every stream that may receive it through a bounded channel:
//! a reader that never reads fills its queue and that stream alone is cut
//! (the queue bounds its memory), while the others go on. The response body
//! ([`StreamBody`]) takes frames off the queue, counts them in the ledger when
//! it hands them to hyper, and ends in one of two ways: cleanly right after an
//! end frame, or with an error (the connection is aborted with no end frame:
//! a silent drop) when the emulator lets go of the queue without one.
//!
//! A stream can also be *stalled* (`POST /_emulator/streams/stall`): the
//! emulator stops offering it frames and the body finishes the frame it was
//! writing, then writes nothing more — no event, heartbeat or end frame —
//! while the connection stays open, as a half-open TCP connection or a NAT
//! that forgot the flow looks to a bot. Frames still queued are discarded
//! uncounted; the connection ends when the bot closes it, or when the
//! emulator lets go of the queue (a give-up time, a drop, shutdown).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame as BodyFrame, SizeHint};
use tokio::sync::{broadcast, mpsc, Notify};

use crate::clock::Clock;
use crate::events::EventInfo;
use crate::ledger::BotLedger;

/// One serialized frame, shared by every stream it goes to.
#[derive(Debug)]
pub struct Frame {
    /// The bytes on the wire.
    pub bytes: Bytes,
    /// Ledger facts of an event frame (`None` for heartbeats and end frames).
    pub info: Option<EventInfo>,
    /// The end frame's reason.
    pub end: Option<&'static str>,
    /// Whether this frame has an `event:` line (counted in `frames`).
    pub counted: bool,
}

/// The emulator's side of one open stream.
#[derive(Debug)]
pub struct StreamHandle {
    /// Stream number (for logs).
    pub id: u64,
    /// Integration index.
    pub integration: usize,
    /// The bot's person id (its own events are never echoed).
    pub bot_user_id: String,
    /// Permissions at connect time.
    pub scope: crate::scope::Scope,
    /// Manager level fixed at connect time (spec 3.3).
    pub manager: bool,
    /// When the access token used to connect expires (→ `TOKEN_EXPIRED`).
    pub token_expires_at: i64,
    /// When the next heartbeat is due.
    pub next_heartbeat: i64,
    tx: mpsc::Sender<Arc<Frame>>,
    cut: Arc<AtomicBool>,
    stalled: Arc<AtomicBool>,
    kill: Option<Arc<Notify>>,
    ledger: Arc<BotLedger>,
    conn: usize,
}

/// What happened to a frame offered to a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// Queued.
    Queued,
    /// The reader is gone (the handle should be dropped).
    Gone,
    /// The queue is full: the stream was cut.
    Cut,
}

impl StreamHandle {
    /// Queues a frame without waiting; a full queue cuts the stream.
    pub fn offer(&self, frame: &Arc<Frame>) -> Offer {
        match self.tx.try_send(Arc::clone(frame)) {
            Ok(()) => Offer::Queued,
            Err(mpsc::error::TrySendError::Closed(_)) => Offer::Gone,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.cut.store(true, Ordering::Release);
                // The writer is stuck on a full socket and will not poll the
                // body again: the connection task aborts the connection.
                if let Some(kill) = &self.kill {
                    kill.notify_one();
                }
                Offer::Cut
            }
        }
    }

    /// Frames queued and not yet taken by the writer.
    pub fn queued(&self) -> usize {
        self.tx.max_capacity() - self.tx.capacity()
    }

    /// Whether this handle feeds connection `conn` of `ledger`.
    pub fn feeds(&self, ledger: &Arc<BotLedger>, conn: usize) -> bool {
        Arc::ptr_eq(&self.ledger, ledger) && self.conn == conn
    }

    /// Whether the reader side still exists.
    pub fn is_open(&self) -> bool {
        !self.tx.is_closed() && !self.cut.load(Ordering::Acquire)
    }

    /// Freezes the connection at `now_ms`: the body writes nothing more
    /// (after the frame it is writing) and keeps the connection open; the
    /// ledger marks the connection stalled. The caller stops offering frames.
    pub fn stall(&self, now_ms: i64) {
        self.stalled.store(true, Ordering::Release);
        self.ledger.stall(self.conn, now_ms);
    }
}

/// Creates a stream: the emulator's handle and the response body.
#[allow(clippy::too_many_arguments)]
pub fn open(
    id: u64,
    integration: usize,
    bot_user_id: String,
    scope: crate::scope::Scope,
    manager: bool,
    token_expires_at: i64,
    next_heartbeat: i64,
    capacity: usize,
    prefix: Option<Bytes>,
    chunk_bytes: usize,
    ledger: Arc<BotLedger>,
    conn: usize,
    clock: Arc<Clock>,
    kill: Option<Arc<Notify>>,
    log: broadcast::Sender<String>,
) -> (StreamHandle, StreamBody) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let cut = Arc::new(AtomicBool::new(false));
    let stalled = Arc::new(AtomicBool::new(false));
    let handle = StreamHandle {
        id,
        integration,
        bot_user_id,
        scope,
        manager,
        token_expires_at,
        next_heartbeat,
        tx,
        cut: Arc::clone(&cut),
        stalled: Arc::clone(&stalled),
        kill,
        ledger: Arc::clone(&ledger),
        conn,
    };
    let body = StreamBody {
        rx,
        cut,
        stalled,
        pending: prefix,
        chunk_bytes,
        flush_first: false,
        flushed_at_cut: false,
        ended: false,
        ledger,
        conn,
        clock,
        id,
        log,
    };
    (handle, body)
}

/// What `poll_frame` returns.
type PollFrame = Poll<Option<Result<BodyFrame<Bytes>, io::Error>>>;

/// The response body of an open stream.
#[derive(Debug)]
pub struct StreamBody {
    rx: mpsc::Receiver<Arc<Frame>>,
    cut: Arc<AtomicBool>,
    stalled: Arc<AtomicBool>,
    pending: Option<Bytes>,
    chunk_bytes: usize,
    flush_first: bool,
    /// The stream was dropped and hyper was given one chance to flush.
    flushed_at_cut: bool,
    ended: bool,
    ledger: Arc<BotLedger>,
    conn: usize,
    clock: Arc<Clock>,
    id: u64,
    log: broadcast::Sender<String>,
}

impl StreamBody {
    fn take_pending(&mut self, cx: &mut Context<'_>) -> Option<PollFrame> {
        let mut data = self.pending.take()?;
        if self.chunk_bytes == 0 || data.len() <= self.chunk_bytes {
            return Some(Poll::Ready(Some(Ok(BodyFrame::data(data)))));
        }
        if self.flush_first {
            // Give hyper a chance to flush: one TCP write per piece.
            self.flush_first = false;
            self.pending = Some(data);
            cx.waker().wake_by_ref();
            return Some(Poll::Pending);
        }
        let rest = data.split_off(self.chunk_bytes);
        self.pending = Some(rest);
        self.flush_first = true;
        Some(Poll::Ready(Some(Ok(BodyFrame::data(data)))))
    }
}

impl Body for StreamBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, io::Error>>> {
        let this = &mut *self;
        if this.cut.load(Ordering::Acquire) {
            return Poll::Ready(Some(Err(io::Error::other("stream cut: reader too slow"))));
        }
        if let Some(ready) = this.take_pending(cx) {
            return ready;
        }
        if this.ended {
            return Poll::Ready(None);
        }
        if this.stalled.load(Ordering::Acquire) {
            // Frozen: what is still queued is never written (nor counted);
            // the connection stays open until the emulator lets go of it.
            loop {
                match this.rx.poll_recv(cx) {
                    Poll::Ready(Some(_)) => continue,
                    Poll::Ready(None) => {
                        return Poll::Ready(Some(Err(io::Error::other("stalled stream let go"))))
                    }
                    Poll::Pending => return Poll::Pending,
                }
            }
        }
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(frame)) => {
                if frame.counted {
                    this.ledger
                        .record(this.conn, frame.info.as_ref(), frame.end);
                }
                if frame.end.is_some() {
                    this.ended = true;
                    this.ledger.close(this.conn, this.clock.now_ms());
                }
                this.pending = Some(frame.bytes.clone());
                this.flush_first = false;
                this.take_pending(cx).unwrap_or(Poll::Pending)
            }
            Poll::Ready(None) if !this.flushed_at_cut => {
                // Cut after what is queued: that was handed to hyper and
                // counted; let hyper flush it (it flushes while the body is
                // pending) before the error aborts the connection, or the
                // last frames would be counted and never sent.
                this.flushed_at_cut = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Poll::Ready(None) => Poll::Ready(Some(Err(io::Error::other("stream dropped")))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        false
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

impl Drop for StreamBody {
    fn drop(&mut self) {
        self.ledger.close(self.conn, self.clock.now_ms());
        if self.log.receiver_count() > 0 {
            let how = if self.ended {
                "after its end frame"
            } else {
                "without an end frame"
            };
            let _ = self.log.send(format!("stream {} closed {how}", self.id));
        }
    }
}
