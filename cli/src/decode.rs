//! `onair decode`: a raw event stream on stdin, one JSON object per item out.
//!
//! The line shapes are a contract, written once in `onair::json`; fields may
//! be added, never changed.

use std::io::{self, BufWriter, Read, Write};

use onair::event;
use onair::json::{ItemJson, RawItemJson};
use onair::sse;
use onair::sse::{Chunk, Parser, DEFAULT_MAX_FRAME_BYTES};

use crate::UsageError;

/// Default read size: 64 KiB, a typical socket read.
const DEFAULT_CHUNK: usize = 64 * 1024;

/// `onair decode`'s options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print generic SSE items ({type, event, data, id, lastEventId}) instead of typed events
    #[arg(long)]
    raw: bool,
    /// Feed the parser N bytes at a time
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CHUNK,
          value_parser = crate::values::positive, allow_hyphen_values = true)]
    chunk: usize,
    /// The largest frame in bytes; a larger one is reported as frame_too_large
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_FRAME_BYTES,
          value_parser = crate::values::positive, allow_hyphen_values = true)]
    max_frame_bytes: usize,
}

/// Runs the command. Exit 0 at end of input whatever the stream held.
pub fn run(opts: &Args) -> Result<(), UsageError> {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    // A closed stdout (e.g. `| head`) ends the run quietly; so does a read error.
    let _ = decode(&mut stdin.lock(), &mut out, opts).and_then(|()| out.flush());
    Ok(())
}

fn decode(input: &mut impl Read, out: &mut impl Write, opts: &Args) -> io::Result<()> {
    let mut parser = Parser::with_max_frame_bytes(opts.max_frame_bytes);
    let mut buf = vec![0u8; opts.chunk];
    loop {
        let filled = fill(input, &mut buf)?;
        if filled == 0 {
            break;
        }
        let mut chunk = Chunk::new(&buf[..filled]);
        while let Some(item) = parser.next_item_in(&mut chunk) {
            emit(out, item, opts.raw)?;
        }
    }
    if let Some(item) = parser.finish() {
        emit(out, item, opts.raw)?;
    }
    Ok(())
}

/// Reads until `buf` is full or input ends, so `--chunk N` feeds exactly N
/// bytes at a time whatever the pipe delivers.
fn fill(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

fn emit(out: &mut impl Write, item: sse::Item<'_>, raw: bool) -> io::Result<()> {
    if raw {
        write_line(out, RawItemJson(&item).to_line())
    } else {
        write_line(out, ItemJson(&event::Item::from_sse(item)).to_line())
    }
}

fn write_line(out: &mut impl Write, mut line: String) -> io::Result<()> {
    line.push('\n');
    out.write_all(line.as_bytes())
}
