//! Progress of a call in flight, from whatever runs it to whoever asked.
//!
//! A face that can show progress (MCP, when the client sent a progress
//! token) runs the call inside [`reporting`]; a backend that hears of
//! progress (an upstream server's `notifications/progress`) passes it to
//! [`sink`]. Nothing is reported when no face asked.

use std::future::Future;
use std::sync::Arc;

/// One progress report.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far along, increasing.
    pub progress: f64,
    /// Out of how much, if known.
    pub total: Option<f64>,
    /// What is happening.
    pub message: Option<String>,
}

/// Where progress reports of the current call go.
pub type Sink = Arc<dyn Fn(Progress) + Send + Sync>;

tokio::task_local! {
    static SINK: Sink;
}

/// Run `call`, sending the progress it reports to `sink`.
pub async fn reporting<F: Future>(sink: Sink, call: F) -> F::Output {
    SINK.scope(sink, call).await
}

/// The sink of the call running on this task, if a face asked for progress.
pub fn sink() -> Option<Sink> {
    SINK.try_with(Clone::clone).ok()
}
