//! Stateless decisions: response classification, quota headers,
//! Retry-After, the merge of the app's daily quota; and the jittered
//! backoff.

use std::ffi::c_char;

use onair_core::api::{classify, Backoff, QuotaHeaders, RetryAfter};
use onair_core::bot::DailyQuota;
use onair_core::{Endpoint, Problem};

use crate::handle::{free, handles, new_handle, Guarded};
use crate::onair_result::{self, *};
use crate::view::{headers_in, onair_header, onair_str};
use crate::{boundary, boundary_on, boundary_on_or, bytes_in, out, out_opt, str_in, string_out};

/// A classified response (`onair_classify`). `kind` and `advice` point to
/// static text (never freed, valid for the life of the program): `kind` is
/// one of the core's problem kinds (`ok`, `unauthorized`, `not_on_air`,
/// `chat_rate_limited`, `quota_daily`, …), `advice` one of its advices
/// (`none`, `refresh_token`, `retry_after`, `reauthorize`, …); the codes
/// are those of `onair explain`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct onair_problem {
    /// What happened.
    pub kind: onair_str,
    /// What to do about it.
    pub advice: onair_str,
    /// The HTTP status.
    pub status: u16,
    /// Whether `retry_after_ms` is known.
    pub has_retry_after_ms: bool,
    /// The Retry-After delay (an HTTP-date is turned into a delay from `now_ms`).
    pub retry_after_ms: u64,
    /// A 401 within a minute of a revocation.
    pub recently_revoked: bool,
    /// The response was a 2xx.
    pub is_ok: bool,
}

unsafe fn classified(
    endpoint: *const c_char,
    endpoint_len: usize,
    status: u16,
    headers: *const onair_header,
    headers_len: usize,
    body: *const u8,
    body_len: usize,
) -> Result<Problem, onair_result> {
    // A NULL endpoint is refused whatever its length (as documented), not
    // read as the empty, unknown name.
    if endpoint.is_null() {
        return Err(ONAIR_NULL_PARAMETER);
    }
    // SAFETY: forwarded (pointer, length) pairs from the caller.
    let name = unsafe { str_in(endpoint, endpoint_len) }?;
    let endpoint = Endpoint::from_name(name).ok_or(ONAIR_UNKNOWN_ENDPOINT)?;
    // SAFETY: as above.
    let headers = unsafe { headers_in(headers, headers_len) }?;
    // SAFETY: as above.
    let body = unsafe { bytes_in(body, body_len) }?;
    Ok(classify(endpoint, status, &headers, body))
}

/// Classifies one response of `endpoint` (its short name: `token`,
/// `revoke`, `live`, `listeners`, `fans`, `chat`, `events`) from its
/// status, headers and body (any bytes; (NULL, 0) for none). `now_ms`
/// (unix ms) turns an HTTP-date Retry-After into a delay.
///
/// Errors: NULL `endpoint` or `out_problem`, or a NULL array with a
/// non-zero length → ONAIR_NULL_PARAMETER; endpoint not UTF-8 →
/// ONAIR_INVALID_UTF8; unknown endpoint → ONAIR_UNKNOWN_ENDPOINT.
#[no_mangle]
pub unsafe extern "C" fn onair_classify(
    endpoint: *const c_char,
    endpoint_len: usize,
    status: u16,
    headers: *const onair_header,
    headers_len: usize,
    body: *const u8,
    body_len: usize,
    now_ms: u64,
    out_problem: *mut onair_problem,
) -> onair_result {
    boundary(|| {
        let slot = out(out_problem)?;
        // SAFETY: forwarded from the caller.
        let problem = unsafe {
            classified(
                endpoint,
                endpoint_len,
                status,
                headers,
                headers_len,
                body,
                body_len,
            )
        }?;
        let explained = problem.explain(Some(now_ms));
        *slot = onair_problem {
            kind: onair_str::of(problem.kind.as_str()),
            advice: onair_str::of(problem.advice.as_str()),
            status,
            has_retry_after_ms: explained.retry_after_ms.is_some(),
            retry_after_ms: explained.retry_after_ms.unwrap_or(0),
            recently_revoked: problem.recently_revoked,
            is_ok: problem.is_ok(),
        };
        Ok(())
    })
}

/// Like `onair_classify`, but writes the JSON object `onair explain`
/// prints (`kind`, `advice`, `status`, `detailCode`, `oauthError`,
/// `retryAfterMs`, `quotaScope`, `recentlyRevoked`) to a string the caller
/// owns (free with `onair_string_free`); `out_len` may be NULL.
///
/// Errors: as `onair_classify`.
#[no_mangle]
pub unsafe extern "C" fn onair_classify_json(
    endpoint: *const c_char,
    endpoint_len: usize,
    status: u16,
    headers: *const onair_header,
    headers_len: usize,
    body: *const u8,
    body_len: usize,
    now_ms: u64,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary(|| {
        let slot = out(out_json)?;
        // SAFETY: forwarded from the caller.
        let problem = unsafe {
            classified(
                endpoint,
                endpoint_len,
                status,
                headers,
                headers_len,
                body,
                body_len,
            )
        }?;
        let json = serde_json::to_string(&problem.explain(Some(now_ms)))
            .map_err(|_| ONAIR_INVALID_ARGUMENT)?;
        string_out(json, slot, out(out_len).ok());
        Ok(())
    })
}

/// The quota headers of a response (`onair_quota_parse`); each value has
/// a presence flag (absent or unreadable: false). The daily scope is in
/// `onair_classify_json`'s `quotaScope`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct onair_quota {
    /// `x-ratelimit-remaining` is present.
    pub has_remaining: bool,
    /// Per-second tokens left.
    pub remaining: u64,
    /// `x-ratelimit-replenish-rate` is present.
    pub has_replenish_rate: bool,
    /// Tokens refilled per second.
    pub replenish_rate: u64,
    /// `x-ratelimit-burst-capacity` is present.
    pub has_burst_capacity: bool,
    /// The burst ceiling.
    pub burst_capacity: u64,
    /// `x-ratelimit-daily-limit` is present.
    pub has_daily_limit: bool,
    /// Daily call limit.
    pub daily_limit: u64,
    /// `x-ratelimit-daily-remaining` is present.
    pub has_daily_remaining: bool,
    /// Calls left today.
    pub daily_remaining: u64,
    /// `x-ratelimit-daily-reset` is present.
    pub has_daily_reset_s: bool,
    /// Next reset, epoch seconds.
    pub daily_reset_s: u64,
    /// A `Retry-After` header was present (even if unreadable).
    pub retry_after_present: bool,
    /// `retry_after_ms` is known.
    pub has_retry_after_ms: bool,
    /// The Retry-After delay from `now_ms`.
    pub retry_after_ms: u64,
}

/// Reads the quota headers (`x-ratelimit-*`, `Retry-After`; names any
/// case, the first of a repeated name wins) into `*out_quota`.
///
/// Errors: NULL `out_quota`, or NULL `headers` with a non-zero length →
/// ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_quota_parse(
    headers: *const onair_header,
    headers_len: usize,
    now_ms: u64,
    out_quota: *mut onair_quota,
) -> onair_result {
    boundary(|| {
        let slot = out(out_quota)?;
        // SAFETY: forwarded from the caller.
        let headers = unsafe { headers_in(headers, headers_len) }?;
        let q = QuotaHeaders::parse(&headers);
        let retry = q.retry_after.map(|r| r.delay_ms(now_ms));
        *slot = onair_quota {
            has_remaining: q.remaining.is_some(),
            remaining: q.remaining.unwrap_or(0),
            has_replenish_rate: q.replenish_rate.is_some(),
            replenish_rate: q.replenish_rate.unwrap_or(0),
            has_burst_capacity: q.burst_capacity.is_some(),
            burst_capacity: q.burst_capacity.unwrap_or(0),
            has_daily_limit: q.daily_limit.is_some(),
            daily_limit: q.daily_limit.unwrap_or(0),
            has_daily_remaining: q.daily_remaining.is_some(),
            daily_remaining: q.daily_remaining.unwrap_or(0),
            has_daily_reset_s: q.daily_reset_s.is_some(),
            daily_reset_s: q.daily_reset_s.unwrap_or(0),
            retry_after_present: q.retry_after_present,
            has_retry_after_ms: retry.is_some(),
            retry_after_ms: retry.unwrap_or(0),
        };
        Ok(())
    })
}

/// A daily quota's JSON form (`{"remaining":…,"resetMs":…,"blocks":[…]}`,
/// every key optional); empty text is nothing known. Anything but a JSON
/// object of that form is refused with why.
pub(crate) fn daily_quota_in(text: &[u8]) -> Result<DailyQuota, String> {
    let text = std::str::from_utf8(text).map_err(|_| "not UTF-8".to_owned())?;
    DailyQuota::from_json(text)
}

/// Merges what one bot of the app learned of the app's daily quota
/// (`learned_json`: `onair_bot_daily_quota_json`'s text) into the app's view
/// (`app_json`: this function's last output, or (NULL, 0) when nothing is
/// known yet) at `now_ms`, the way a store shared by many bots keeps it:
/// the later reset wins with its count, the same reset keeps the lower
/// count, blocks are merged by scope (the later end wins), and what has
/// passed by `now_ms` is dropped. The merged view goes to `*out_json`, a
/// string the caller owns (free with `onair_string_free`; `out_len` may be
/// NULL); `*out_changed` (may be NULL) says whether it differs from
/// `app_json`'s. Give it to every bot with
/// `onair_bot_share_daily_quota_json`.
///
/// Errors: NULL `out_json`, or a NULL text with a non-zero length →
/// ONAIR_NULL_PARAMETER; not UTF-8 → ONAIR_INVALID_UTF8; a text that is
/// not a daily quota's JSON object → ONAIR_INVALID_ARGUMENT (nothing
/// written).
#[no_mangle]
pub unsafe extern "C" fn onair_daily_quota_merge(
    app_json: *const c_char,
    app_json_len: usize,
    learned_json: *const c_char,
    learned_json_len: usize,
    now_ms: u64,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
    out_changed: *mut bool,
) -> onair_result {
    boundary(|| {
        let slot = out(out_json)?;
        // SAFETY: (pointer, length) pairs from the caller.
        let (app, learned) = unsafe {
            (
                str_in(app_json, app_json_len)?,
                str_in(learned_json, learned_json_len)?,
            )
        };
        let mut app = daily_quota_in(app.as_bytes()).map_err(|_| ONAIR_INVALID_ARGUMENT)?;
        let learned = daily_quota_in(learned.as_bytes()).map_err(|_| ONAIR_INVALID_ARGUMENT)?;
        let changed = app.merge(&learned, now_ms);
        let json = serde_json::to_string(&app).map_err(|_| ONAIR_INVALID_ARGUMENT)?;
        string_out(json, slot, out(out_len).ok());
        out_opt(out_changed, changed);
        Ok(())
    })
}

/// A `Retry-After` value (delay seconds or HTTP-date; any bytes, no NUL
/// needed) as a delay in ms from `now_ms` (capped at one day).
///
/// Errors: NULL `out_ms` → ONAIR_NULL_PARAMETER; unreadable value →
/// ONAIR_INVALID_ARGUMENT (nothing written).
#[no_mangle]
pub unsafe extern "C" fn onair_retry_after_ms(
    value: *const u8,
    len: usize,
    now_ms: u64,
    out_ms: *mut u64,
) -> onair_result {
    boundary(|| {
        let slot = out(out_ms)?;
        // SAFETY: forwarded from the caller.
        let value = unsafe { bytes_in(value, len) }?;
        let parsed = RetryAfter::parse(value).ok_or(ONAIR_INVALID_ARGUMENT)?;
        *slot = parsed.delay_ms(now_ms);
        Ok(())
    })
}

/// Jittered exponential backoff (the core's: 1 s doubling to 30 s, full
/// jitter, seeded).
///
/// Threads: one thread at a time; a concurrent call gets ONAIR_BUSY
/// (`_reset`: does nothing; `_attempt`: 0) and changes nothing. Free it
/// only when no other thread may call it.
#[derive(Debug)]
pub struct onair_backoff(Guarded<Backoff>);

handles! { onair_backoff => Backoff, tag 6 }

/// A backoff with the spec's limits (`base_ms` = `cap_ms` = 0), or custom
/// ones; `seed` fixes the jitter. Free with `onair_backoff_free`.
///
/// Errors: NULL `out_backoff` → ONAIR_NULL_PARAMETER; only one of
/// `base_ms`, `cap_ms` zero → ONAIR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn onair_backoff_new(
    base_ms: u64,
    cap_ms: u64,
    seed: u64,
    out_backoff: *mut *mut onair_backoff,
) -> onair_result {
    boundary(|| {
        let slot = out(out_backoff)?;
        let backoff = match (base_ms, cap_ms) {
            (0, 0) => Backoff::new(seed),
            (0, _) | (_, 0) => return Err(ONAIR_INVALID_ARGUMENT),
            (b, c) => Backoff::with_limits(b, c, seed),
        };
        *slot = new_handle::<onair_backoff>(backoff)?;
        Ok(())
    })
}

/// Frees a backoff.
///
/// Returns ONAIR_OK (NULL included); ONAIR_FREED_HANDLE when it was freed
/// already (a double free, or a stale handle whose slot now holds another
/// object, which is left alone); ONAIR_INVALID_HANDLE for a pointer that is
/// no handle of this kind; ONAIR_BUSY when another thread is in a call on
/// it (nothing is freed: free it once that call is over).
#[no_mangle]
pub unsafe extern "C" fn onair_backoff_free(backoff: *mut onair_backoff) -> onair_result {
    // SAFETY: NULL or a handle from this library, freed once.
    boundary(|| unsafe { free(backoff) })
}

/// The next delay in ms (and counts one more attempt).
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_backoff_next_delay_ms(
    backoff: *mut onair_backoff,
    out_ms: *mut u64,
) -> onair_result {
    boundary_on(backoff, |b| {
        let slot = out(out_ms)?;
        *slot = b.next_delay_ms();
        Ok(())
    })
}

/// Starts over after a success. NULL is ignored, and so is a call while
/// another thread is in a call on the backoff.
#[no_mangle]
pub unsafe extern "C" fn onair_backoff_reset(backoff: *mut onair_backoff) {
    boundary_on_or((), backoff, |b| b.reset())
}

/// Attempts counted since the last reset; NULL, or a call on it in flight
/// on another thread → 0.
#[no_mangle]
pub unsafe extern "C" fn onair_backoff_attempt(backoff: *const onair_backoff) -> u32 {
    boundary_on_or(0, backoff, |b| b.attempt())
}
