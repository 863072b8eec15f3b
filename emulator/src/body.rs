//! A response body of the emulator: a whole buffer, an event stream, or a
//! replayed one.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::playback::ReplayBody;
use crate::stream::StreamBody;

/// A response body: a whole buffer or an open event stream.
#[derive(Debug)]
pub enum EmuBody {
    /// Whole (`None` once sent or when empty).
    Full(Option<Bytes>),
    /// An event stream.
    Stream(Box<StreamBody>),
    /// A replayed event stream (`onair serve --replay`).
    Replay(Box<ReplayBody>),
}

impl Body for EmuBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.get_mut() {
            EmuBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            EmuBody::Stream(s) => Pin::new(&mut **s).poll_frame(cx),
            EmuBody::Replay(s) => Pin::new(&mut **s).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, EmuBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            EmuBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            EmuBody::Full(None) => SizeHint::with_exact(0),
            EmuBody::Stream(s) => s.size_hint(),
            EmuBody::Replay(s) => s.size_hint(),
        }
    }
}
