//! What a scrape reads of a host: its counters and states as
//! [`Readings`], taken from the parts that keep them (the compiler, the
//! runtime, the reloader, the catalog, the upstream servers, the audit log)
//! without loading, compiling or spawning anything.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::{Host, Inner};
use crate::audit::AuditLog;
use crate::catalog::ServerState;
use crate::disclosure::tokens::Cost;
use crate::telemetry::{self, Footprint, Readings, UpstreamReading};

/// A host as its metrics read it (held weakly: the metrics belong to it).
pub(super) struct Readable {
    host: Weak<Inner>,
    /// Whether to count the prompt footprint (it loads a tokenizer table).
    count_tokens: bool,
    /// The default agent's footprint, and what it was counted for: the
    /// catalog revision and how many plugins' manifests were known (a
    /// plugin loaded since makes its tools' schemas known).
    footprint: Mutex<Option<((u64, usize), Footprint)>>,
}

impl Readable {
    pub(super) fn new(host: &Arc<Inner>, count_tokens: bool) -> Readable {
        Readable { host: Arc::downgrade(host), count_tokens, footprint: Mutex::default() }
    }

    /// The default agent's footprint, counted again only when the catalog
    /// or what is known of it changed.
    fn footprint(&self, host: &Host) -> Option<Footprint> {
        if !self.count_tokens {
            return None;
        }
        let catalog = host.catalog();
        let known = catalog.plugins().filter(|plugin| plugin.manifest().is_some()).count();
        let revision = catalog.revision();
        let mut kept = self.footprint.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((at, footprint)) = *kept
            && at == (revision, known)
        {
            return Some(footprint);
        }
        let session = host.session(None).ok()?;
        let (full_known, tools_unknown) = session.known_full_cost();
        let footprint = Footprint {
            tier1: Cost::o200k_of(&session.system_prompt()) as u64,
            full_known: full_known as u64,
            tools_unknown: tools_unknown as u64,
        };
        *kept = Some(((revision, known), footprint));
        Some(footprint)
    }
}

impl telemetry::Source for Readable {
    fn read(&self) -> Readings {
        let Some(inner) = self.host.upgrade() else { return Readings::default() };
        let host = Host { inner };
        let catalog = host.catalog();
        let stats = host.load_stats();
        let failing: Vec<&str> = catalog
            .mcp_servers()
            .filter(|s| matches!(s.state, ServerState::Failing(_)))
            .map(|s| s.name.as_str())
            .collect();
        Readings {
            compiles: stats.compiled(),
            cache_hits: stats.cache_hits(),
            instantiations: stats.instantiated(),
            reused_instances: stats.reused(),
            reloads: host.inner.reloader.reloads(),
            revision: catalog.revision(),
            plugins: catalog.plugins().count() as u64,
            rejected: catalog.rejected().len() as u64,
            upstreams: host
                .upstream_status()
                .into_iter()
                .map(|u| UpstreamReading {
                    failing: failing.contains(&u.name.as_str()),
                    name: u.name,
                    starts: u.starts,
                    connected: u.connected,
                    failures: u.failures,
                })
                .collect(),
            audit_write_failures: host.inner.services.backend.audit().map_or(0, AuditLog::write_failures),
            footprint: self.footprint(&host),
        }
    }
}
