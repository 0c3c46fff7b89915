//! What an operator's tools read of the host: Prometheus metrics
//! ([`metrics`]), with tool labels kept bounded ([`labels`]), and
//! OpenTelemetry traces ([`traces`]: the exporter; [`spans`]: the spans by
//! the MCP semantic conventions; [`context`]: W3C trace context in and out).
//!
//! A leaf of the house: the faces and the call router record into it, and
//! the host tells it what to read of its own state when it is scraped
//! ([`Readings`]), so nothing here reaches up into the layers it measures.

pub mod context;
pub mod labels;
pub mod metrics;
pub mod spans;
pub mod traces;

pub use self::labels::StickyLabels;
pub use self::metrics::{Footprint, Metrics, MetricsSettings, Readings, Source, UpstreamReading, Usage};
pub use self::traces::{Exporter, TelemetryError, TelemetrySettings};
