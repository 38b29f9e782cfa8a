//! A bus handle whose faults a test sets, over any other bus: what the tests of the
//! runtime's link, of calls between instances and of the buses themselves need when a
//! real server cannot be made to misbehave on cue.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::watch;

use crate::bus::{
    Address, Bus, BusError, BusState, Count, Event, InstanceId, Message, Subscription,
};

/// What [`Faulty::send`](Bus::send) does with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Sends {
    /// Passed on.
    Pass = 0,
    /// Dropped, and said to be sent (an instance killed or cut off after the fact).
    Dropped = 1,
    /// Never done (a server that stopped answering).
    Stuck = 2,
}

/// `inner` with faults: sends dropped or stuck, publishes held or refused, mailboxes
/// slow to open or that hear nothing, and (with [`Faulty::own_state`]) a state the test sets rather
/// than `inner`'s.
#[derive(Debug)]
pub struct Faulty {
    inner: Arc<dyn Bus>,
    state: Option<watch::Sender<BusState>>,
    sends: AtomicU8,
    sent: AtomicUsize,
    hold: watch::Sender<bool>,
    hold_mailboxes: watch::Sender<bool>,
    refuse: AtomicBool,
    deaf: AtomicBool,
}

impl Faulty {
    /// `inner`, with no fault yet; its state is `inner`'s.
    #[must_use]
    pub fn new(inner: Arc<dyn Bus>) -> Self {
        Self {
            inner,
            state: None,
            sends: AtomicU8::new(Sends::Pass as u8),
            sent: AtomicUsize::new(0),
            hold: watch::Sender::new(false),
            hold_mailboxes: watch::Sender::new(false),
            refuse: AtomicBool::new(false),
            deaf: AtomicBool::new(false),
        }
    }

    /// `inner`, with a state of its own, `state` at first ([`Faulty::set_state`]).
    #[must_use]
    pub fn own_state(inner: Arc<dyn Bus>, state: BusState) -> Self {
        Self {
            state: Some(watch::Sender::new(state)),
            ..Self::new(inner)
        }
    }

    /// Sets the state of a handle made with [`Faulty::own_state`] (no effect otherwise).
    pub fn set_state(&self, state: BusState) {
        if let Some(s) = &self.state {
            s.send_replace(state);
        }
    }

    /// What sends do from now on.
    pub fn sends(&self, sends: Sends) {
        self.sends.store(sends as u8, Ordering::SeqCst);
    }

    /// How many sends were asked of this handle.
    #[must_use]
    pub fn sent(&self) -> usize {
        self.sent.load(Ordering::SeqCst)
    }

    /// Publishes wait while `held` (they then go on, or are refused).
    pub fn hold_publishes(&self, held: bool) {
        self.hold.send_replace(held);
    }

    /// Publishes fail with [`BusError::Unavailable`] while `refused`.
    pub fn refuse_publishes(&self, refused: bool) {
        self.refuse.store(refused, Ordering::SeqCst);
    }

    /// Mailboxes wait to open while `held` (a bus slow to let an instance listen).
    pub fn hold_mailboxes(&self, held: bool) {
        self.hold_mailboxes.send_replace(held);
    }

    /// Mailboxes opened from now on hear nothing sent to their instance.
    pub fn deafen(&self) {
        self.deaf.store(true, Ordering::SeqCst);
    }
}

impl Bus for Faulty {
    fn publish(&self, event: Event) -> BoxFuture<'_, Result<(), BusError>> {
        Box::pin(async move {
            let _ = self.hold.subscribe().wait_for(|held| !held).await;
            if self.refuse.load(Ordering::SeqCst) {
                return Err(BusError::Unavailable("publish refused (test)".into()));
            }
            self.inner.publish(event).await
        })
    }

    fn events(&self) -> Subscription<Event> {
        self.inner.events()
    }

    fn send(&self, to: Address, message: Message) -> BoxFuture<'_, Result<(), BusError>> {
        self.sent.fetch_add(1, Ordering::SeqCst);
        match self.sends.load(Ordering::SeqCst) {
            0 => self.inner.send(to, message),
            1 => Box::pin(async { Ok(()) }),
            _ => Box::pin(std::future::pending()),
        }
    }

    fn messages<'a>(
        &'a self,
        me: &'a InstanceId,
    ) -> BoxFuture<'a, Result<Subscription<Message>, BusError>> {
        Box::pin(async move {
            let _ = self.hold_mailboxes.subscribe().wait_for(|held| !held).await;
            if self.deaf.load(Ordering::SeqCst) {
                // Listening as nobody: what is sent to `me` is lost.
                return self.inner.messages(&InstanceId::random()).await;
            }
            self.inner.messages(me).await
        })
    }

    fn count<'a>(
        &'a self,
        key: &'a str,
        by: u64,
        window: Duration,
    ) -> BoxFuture<'a, Result<Count, BusError>> {
        self.inner.count(key, by, window)
    }

    fn state(&self) -> watch::Receiver<BusState> {
        match &self.state {
            Some(s) => s.subscribe(),
            None => self.inner.state(),
        }
    }
}
