//! Tests of the oauth module.
