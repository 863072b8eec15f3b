//! A lease's timing, in one place: how long a lease lasts, how often a
//! replica renews it, when a replica counts as live, when one cut from its
//! database gives up its bots, and how much lease a refresh needs. The
//! lease keeper (`replicas`) and the bots (`bots`) both follow it.

use std::time::Duration;

/// A lease's length (ms).
pub const LEASE_MS: i64 = 15_000;
/// How often a replica renews, beats and balances.
pub const TICK: Duration = Duration::from_secs(2);
/// A replica that beat within this long is live (ms).
pub const ALIVE_MS: i64 = 8_000;
/// A replica that could not renew for this long stops its bots (ms).
pub const GIVE_UP_MS: i64 = 10_000;
/// A refresh goes only while the lease has this long left (ms).
pub const REFRESH_MARGIN_MS: i64 = 8_000;
