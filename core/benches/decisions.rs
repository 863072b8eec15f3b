//! Costs of the protocol decisions: classifying a response and reading the
//! quota headers. Run: `cargo bench -p onair --bench decisions`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use onair::api::{classify, QuotaHeaders, RetryAfter};
use onair::Endpoint;

const BOT_ERROR: &[u8] = br#"{"instance":"/v1/live","status":404,"title":"Not Found","detailCode":"OAPI_MNGR_0301","message":"The DJ is not on air.","userId":null,"extra":null,"timestamp":1700000000000}"#;
const STREAM_ERROR: &[u8] =
    b"data:{\"status\":403,\"detailCode\":\"OAPI_MNGR_0209\",\"message\":\"cannot join\"}\n\n";
const OAUTH_ERROR: &[u8] =
    br#"{"error":"invalid_grant","error_description":"The refresh token is invalid or expired."}"#;

const TYPICAL_HEADERS: &[(&str, &str)] = &[
    ("Date", "Tue, 14 Nov 2023 22:13:20 GMT"),
    ("Content-Type", "application/json"),
    ("Content-Length", "176"),
    ("Connection", "keep-alive"),
    ("X-RateLimit-Remaining", "7"),
    ("X-RateLimit-Replenish-Rate", "10"),
    ("X-RateLimit-Burst-Capacity", "20"),
    ("X-RateLimit-Daily-Limit", "100000"),
    ("X-RateLimit-Daily-Remaining", "98765"),
    ("X-RateLimit-Daily-Reset", "1700006400"),
];
const DAILY_429: &[(&str, &str)] = &[
    ("Date", "Tue, 14 Nov 2023 22:13:20 GMT"),
    ("Content-Length", "0"),
    ("Retry-After", "6400"),
    ("x-ratelimit-daily-scope", "fans.read"),
];

fn bench_classify(c: &mut Criterion) {
    let mut g = c.benchmark_group("classify");
    g.throughput(Throughput::Elements(1));
    g.bench_function("404_0301_json_typical_headers", |b| {
        b.iter(|| {
            classify(
                Endpoint::Live,
                black_box(404),
                black_box(TYPICAL_HEADERS),
                black_box(BOT_ERROR),
            )
        })
    });
    g.bench_function("403_0209_sse_body", |b| {
        b.iter(|| {
            classify(
                Endpoint::Events,
                black_box(403),
                black_box(&[] as &[(&str, &str)]),
                black_box(STREAM_ERROR),
            )
        })
    });
    g.bench_function("400_invalid_grant_oauth", |b| {
        b.iter(|| {
            classify(
                Endpoint::Token,
                black_box(400),
                black_box(&[] as &[(&str, &str)]),
                black_box(OAUTH_ERROR),
            )
        })
    });
    g.bench_function("429_daily_empty_body", |b| {
        b.iter(|| {
            classify(
                Endpoint::Fans,
                black_box(429),
                black_box(DAILY_429),
                black_box(&b""[..]),
            )
        })
    });
    g.bench_function("200_ok_typical_headers", |b| {
        b.iter(|| {
            classify(
                Endpoint::Live,
                black_box(200),
                black_box(TYPICAL_HEADERS),
                black_box(&b"{}"[..]),
            )
        })
    });
    g.finish();
}

fn bench_quota(c: &mut Criterion) {
    let mut g = c.benchmark_group("quota");
    g.throughput(Throughput::Elements(1));
    g.bench_function("parse_10_typical_headers", |b| {
        b.iter(|| QuotaHeaders::parse(black_box(TYPICAL_HEADERS)))
    });
    g.bench_function("retry_after_delta_seconds", |b| {
        b.iter(|| RetryAfter::parse(black_box(b"6400")))
    });
    g.bench_function("retry_after_imf_fixdate", |b| {
        b.iter(|| RetryAfter::parse(black_box(b"Wed, 15 Nov 2023 00:00:00 GMT")))
    });
    g.bench_function("retry_after_asctime", |b| {
        b.iter(|| RetryAfter::parse(black_box(b"Wed Nov 15 00:00:00 2023")))
    });
    g.finish();
}

criterion_group!(benches, bench_classify, bench_quota);
criterion_main!(benches);
