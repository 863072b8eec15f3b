//! Traces: the bots' spans exported over OTLP/HTTP (protobuf) to a
//! collector, when one is configured (`[host.traces] otlp_endpoint`, else
//! `OTEL_EXPORTER_OTLP_ENDPOINT`); off by default.
//!
//! The spans are the driver's (`onair-tokio`, level DEBUG): per connection
//! a `stream` (a root: one trace per connection) with its `connect` (the
//! stream's request), a `process` per event, a `send` per chat message (the
//! kit's replies), a `refresh` per token refresh and a `call` per other
//! request (method, `url.template`, status); each names its bot by the
//! host's id (`onair.bot`) and never a person, a nickname or a token. The
//! attributes follow OpenTelemetry's messaging conventions
//! (`messaging.system = "onair"`, `messaging.operation.name` `receive`,
//! `process` or `send`, the event's kind as `onair.event.kind`).
//!
//! Without an endpoint no layer is installed and the driver's spans are
//! disabled at their callsites: they cost what a disabled `tracing` span
//! costs. With one, the SDK's batch processor queues at most 2 048 spans
//! and sends them every 5 s from a thread of its own, through a reqwest
//! client on the host's runtime (no gRPC, no second HTTP stack); a queue
//! that overflows drops spans, never blocks a bot.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The standard variable naming the collector's OTLP/HTTP base address
/// (`/v1/traces` is appended), read when host.toml names none.
pub const ENV_OTLP_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// How long one export may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the traces' configuration says (`[host.traces]`).
#[derive(Debug, Clone, PartialEq)]
pub struct TracesConfig {
    /// The collector's OTLP/HTTP base address, e.g.
    /// `http://127.0.0.1:4318` (the spans go to its `/v1/traces`).
    pub otlp_endpoint: String,
    /// The share of connections traced, 0 to 1 (each connection is a
    /// trace: its events and calls are kept or dropped with it).
    pub sample_ratio: f64,
}

/// Why the exporter did not start.
#[derive(Debug, thiserror::Error)]
#[error("traces: {0}")]
pub struct TracesError(String);

/// The exporter, running: its layer for the subscriber, and a flush at
/// the end.
#[derive(Debug)]
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// Starts exporting to `config`'s collector. Call it inside a tokio
    /// runtime: the exports are sent from it.
    pub fn start(config: &TracesConfig) -> Result<Traces, TracesError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| TracesError("no tokio runtime to send the exports from".into()))?;
        let http = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TracesError(e.to_string()))?;
        let endpoint = format!("{}/v1/traces", config.otlp_endpoint.trim_end_matches('/'));
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(Client { http, runtime })
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TracesError(e.to_string()))?;
        let sampler =
            Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(config.sample_ratio)));
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_sampler(sampler)
            .with_resource(Resource::builder().with_service_name("onair-host").build())
            .build();
        Ok(Traces { provider })
    }

    /// The subscriber's layer: the driver's spans (and nothing else) to the
    /// exporter.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        // Only the spans' own attributes: no source location, thread,
        // target or busy time (the same for every span of a kind, or
        // meaningless for spans never entered).
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("onair-host"))
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_filter(spans())
    }

    /// Sends what is queued and stops the exporter (at most a few seconds).
    pub async fn shutdown(self) {
        let provider = self.provider;
        let done = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        match done {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "traces: the last spans were not sent"),
            Err(e) => tracing::warn!(error = %e, "traces: the exporter did not stop"),
        }
    }
}

/// The spans exported: the driver's.
fn spans() -> Targets {
    Targets::new().with_target("onair_tokio", LevelFilter::DEBUG)
}

/// The exporter's HTTP client: the host's reqwest, run on the host's
/// runtime (the batch processor exports from a thread of its own).
#[derive(Debug)]
struct Client {
    http: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl HttpClient for Client {
    fn send_bytes<'a, 'b>(
        &'a self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        let http = self.http.clone();
        let sent = reqwest::Request::try_from(request).map(|request| {
            self.runtime.spawn(async move {
                let answer = http.execute(request).await?;
                let status = answer.status();
                let headers = answer.headers().clone();
                let body = answer.bytes().await?;
                Ok::<_, reqwest::Error>((status, headers, body))
            })
        });
        Box::pin(async move {
            let (status, headers, body) = sent?.await??;
            let mut response = Response::new(body);
            *response.status_mut() = status;
            *response.headers_mut() = headers;
            Ok(response)
        })
    }
}
