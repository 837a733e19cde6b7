//! What every plugin call may use: CPU time, wall-clock time, memory, instances.

use std::time::Duration;

/// Limits applied to every plugin call.
#[derive(Debug, Clone, Copy)]
pub struct PluginLimits {
    /// CPU time one call may use: its own work, on whichever threads ran it.
    pub cpu_budget: Duration,
    /// Wall-clock time after which a call is stopped whatever CPU time it used (a backstop for
    /// a call whose CPU time is not what grows, and for a host that cannot measure it).
    pub wall_backstop: Duration,
    /// Linear-memory cap of one instance.
    pub memory_bytes: usize,
    /// Instances alive at once; callers wait for a free one.
    pub max_instances: u32,
    /// Of those, the instances stream requests may hold.
    pub max_stream_instances: u32,
    /// How long a caller waits for a free instance before giving up.
    pub instance_wait: Duration,
}

impl PluginLimits {
    /// The limits `plugins:` sets.
    pub fn from_config(config: &crate::config::PluginsConfig) -> anyhow::Result<Self> {
        Ok(Self {
            cpu_budget: config.call_cpu_budget(),
            wall_backstop: config.call_wall_backstop(),
            memory_bytes: usize::try_from(config.memory_limit_mib << 20)?,
            max_instances: config.max_instances,
            max_stream_instances: config.max_stream_instances(),
            instance_wait: config.instance_wait(),
        })
    }
}
