//! The emulator over real HTTP on an ephemeral 127.0.0.1 port, with a real
//! client (reqwest), never the server's internals.

#![allow(clippy::unwrap_used)] // tests may unwrap

mod asyncapi;
mod bad_input;
mod bodies;
mod common;
mod consent;
mod control;
mod djs;
mod endpoints;
mod fleet;
mod handling;
mod marks;
mod oauth;
mod requests;
mod routing;
mod scenario;
mod stall;
mod stream;
