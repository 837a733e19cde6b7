//! The instance pool's slots: how many plugin instances may be alive at once, how many of them
//! open streams may hold, how long a caller waits for one, and how many idle warm instances may
//! be kept.
//!
//! Every instance, a warm one included, holds one of `max_instances` permits, which is also the
//! pooling allocator's instance count: the pool can never be asked for more than it has. A
//! stream's instance also holds a permit of the stream share, so that streams, which hold their
//! instance for minutes, cannot take the slots that short requests, routers and limiters need.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::limits::PluginLimits;

/// What an instance is taken for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotKind {
    /// A call or a request that ends with its answer (routers, limiters, whole answers).
    Call,
    /// A request whose instance may go on to decode a stream.
    Stream,
}

pub(super) struct Slots {
    instances: Arc<Semaphore>,
    streams: Arc<Semaphore>,
    max: u32,
    max_streams: u32,
    max_warm: u32,
    wait: Duration,
    warm: AtomicU32,
    waiting: AtomicU32,
    /// Waits that ended without a slot: calls, then streams.
    timed_out: [AtomicU64; 2],
}

/// One instance's slot, given back when dropped.
pub(super) struct Slot {
    _instance: OwnedSemaphorePermit,
    _stream: Option<OwnedSemaphorePermit>,
}

/// Lets one idle instance stay warm; given back when the instance is taken or dropped.
pub(super) struct WarmTicket(Arc<Slots>);

impl Drop for WarmTicket {
    fn drop(&mut self) {
        self.0.warm.fetch_sub(1, Ordering::Relaxed);
    }
}

/// No slot came free in time.
#[derive(Debug, Clone, Copy)]
pub(super) struct NoSlot {
    pub(super) waited_ms: u64,
}

/// The slots in use, for `/health` and `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstanceUsage {
    /// Instances alive (warm idle ones included).
    pub in_use: u32,
    pub max: u32,
    /// Instances held by stream requests.
    pub streams: u32,
    pub max_streams: u32,
    /// Callers waiting for a slot now.
    pub waiting: u32,
    /// Waits that ended without a slot since start: calls, streams.
    pub timed_out_calls: u64,
    pub timed_out_streams: u64,
}

impl InstanceUsage {
    /// Whether a new request may have to wait for an instance: every slot is taken, or, for a
    /// stream, every slot of the stream share.
    pub fn saturated(&self) -> bool {
        self.in_use >= self.max || self.streams >= self.max_streams
    }
}

impl Slots {
    pub(super) fn new(limits: &PluginLimits) -> Arc<Self> {
        let max = limits.max_instances.max(1);
        let max_streams = limits.max_stream_instances.clamp(1, max);
        Arc::new(Self {
            instances: Arc::new(Semaphore::new(max as usize)),
            streams: Arc::new(Semaphore::new(max_streams as usize)),
            max,
            max_streams,
            // Idle warm instances keep at most half the slots streams cannot take, so that they
            // never crowd out the requests they are there to speed up.
            max_warm: (max - max_streams) / 2,
            wait: limits.instance_wait,
            warm: AtomicU32::new(0),
            waiting: AtomicU32::new(0),
            timed_out: [AtomicU64::new(0), AtomicU64::new(0)],
        })
    }

    /// A slot for `kind`, waiting at most the configured time for it.
    pub(super) async fn take(&self, kind: SlotKind) -> Result<Slot, NoSlot> {
        let deadline = tokio::time::Instant::now() + self.wait;
        let stream = match kind {
            SlotKind::Call => None,
            SlotKind::Stream => Some(self.acquire(&self.streams, deadline, kind).await?),
        };
        let instance = self.acquire(&self.instances, deadline, kind).await?;
        Ok(Slot {
            _instance: instance,
            _stream: stream,
        })
    }

    async fn acquire(
        &self,
        semaphore: &Arc<Semaphore>,
        deadline: tokio::time::Instant,
        kind: SlotKind,
    ) -> Result<OwnedSemaphorePermit, NoSlot> {
        if let Ok(permit) = Arc::clone(semaphore).try_acquire_owned() {
            return Ok(permit);
        }
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let waited = tokio::time::timeout_at(deadline, Arc::clone(semaphore).acquire_owned()).await;
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        match waited {
            Ok(Ok(permit)) => Ok(permit),
            // The semaphores are never closed; a closed one is as good as none free.
            Ok(Err(_)) | Err(_) => {
                self.timed_out[kind as usize].fetch_add(1, Ordering::Relaxed);
                let waited_ms = u64::try_from(self.wait.as_millis()).unwrap_or(u64::MAX);
                Err(NoSlot { waited_ms })
            }
        }
    }

    /// A ticket to keep one more idle instance warm, while fewer than the cap are.
    pub(super) fn keep_warm(self: &Arc<Self>) -> Option<WarmTicket> {
        self.warm
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |warm| {
                (warm < self.max_warm).then_some(warm + 1)
            })
            .ok()
            .map(|_| WarmTicket(Arc::clone(self)))
    }

    pub(super) fn usage(&self) -> InstanceUsage {
        let free = |s: &Semaphore| u32::try_from(s.available_permits()).unwrap_or(u32::MAX);
        InstanceUsage {
            in_use: self.max.saturating_sub(free(&self.instances)),
            max: self.max,
            streams: self.max_streams.saturating_sub(free(&self.streams)),
            max_streams: self.max_streams,
            waiting: self.waiting.load(Ordering::Relaxed),
            timed_out_calls: self.timed_out[SlotKind::Call as usize].load(Ordering::Relaxed),
            timed_out_streams: self.timed_out[SlotKind::Stream as usize].load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(max: u32, streams: u32, wait_ms: u64) -> Arc<Slots> {
        Slots::new(&PluginLimits {
            cpu_budget: Duration::from_millis(10),
            wall_backstop: Duration::from_millis(100),
            memory_bytes: 1 << 20,
            max_instances: max,
            max_stream_instances: streams,
            instance_wait: Duration::from_millis(wait_ms),
        })
    }

    #[tokio::test]
    async fn streams_cannot_take_the_slots_of_calls() {
        let slots = slots(4, 2, 50);
        let a = slots.take(SlotKind::Stream).await;
        let b = slots.take(SlotKind::Stream).await;
        assert!(a.is_ok() && b.is_ok());
        assert!(slots.take(SlotKind::Stream).await.is_err());
        let usage = slots.usage();
        assert_eq!(
            (usage.in_use, usage.streams, usage.timed_out_streams),
            (2, 2, 1)
        );
        assert!(usage.saturated());
        let c = slots.take(SlotKind::Call).await;
        let d = slots.take(SlotKind::Call).await;
        assert!(c.is_ok() && d.is_ok());
        assert!(slots.take(SlotKind::Call).await.is_err());
        assert_eq!(slots.usage().timed_out_calls, 1);
        drop((a, c));
        assert!(slots.take(SlotKind::Stream).await.is_ok());
        assert!(!slots.usage().saturated());
    }

    #[tokio::test]
    async fn a_waiter_gets_a_slot_given_back_before_its_deadline() {
        let slots = slots(1, 1, 10_000);
        let held = slots.take(SlotKind::Call).await;
        let waiter = {
            let slots = Arc::clone(&slots);
            tokio::spawn(async move { slots.take(SlotKind::Call).await.is_ok() })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(slots.usage().waiting, 1);
        drop(held);
        assert!(waiter.await.unwrap_or(false));
    }

    #[test]
    fn warm_instances_keep_at_most_half_the_slots_streams_cannot_take() {
        let slots = slots(10, 6, 1);
        let tickets: Vec<_> = (0..5).filter_map(|_| slots.keep_warm()).collect();
        assert_eq!(tickets.len(), 2);
        drop(tickets);
        assert!(slots.keep_warm().is_some());
    }
}
