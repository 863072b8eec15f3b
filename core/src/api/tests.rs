//! Tests of the api module.
