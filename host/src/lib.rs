//! onair-host
#![forbid(unsafe_code)]
pub mod config;
pub mod crypto;
pub mod store;
