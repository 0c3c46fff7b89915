//! What an operator's tools read of the host: Prometheus metrics
//! ([`metrics`]), with tool labels kept bounded ([`labels`]).
//!
//! A leaf of the house: the faces and the call router record into it, and
//! the host tells it what to read of its own state when it is scraped
//! ([`Readings`]), so nothing here reaches up into the layers it measures.

pub mod labels;
pub mod metrics;

pub use self::labels::StickyLabels;
pub use self::metrics::{Metrics, MetricsSettings, Readings, Source, UpstreamReading};
