//! [`Mailboxes`]: this process's subscribers to addressed messages, one [`Fanout`] per
//! instance id (shared by every [`Bus`](super::Bus) implementation).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::fanout::{Fanout, Subscription};
use super::types::{Address, InstanceId, Message};

/// The instances of this process that receive addressed messages, and their subscribers.
///
/// ```
/// use snodo::bus::{Address, InstanceId, Mailboxes, Message, Received};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), snodo::bus::BusError> {
/// let boxes = Mailboxes::new(16);
/// let me = InstanceId::new("a")?;
/// let mut inbox = boxes.subscribe(&me);
/// let cancel = Message::Cancel { request: "1".into(), reason: None };
/// boxes.deliver(&Address::Instance(InstanceId::new("b")?), &cancel);
/// boxes.deliver(&Address::Every, &cancel);
/// assert_eq!(inbox.recv().await, Some(Received::Item(cancel)));
/// assert_eq!(inbox.try_recv(), None);
/// assert_eq!(boxes.instances(), vec![me.clone()]);
/// drop(inbox);
/// assert!(boxes.instances().is_empty());
/// assert!(!boxes.wants(&Address::Instance(me)));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Mailboxes {
    backlog: usize,
    boxes: Mutex<HashMap<InstanceId, Fanout<Message>>>,
}

impl Mailboxes {
    /// No mailbox yet; each will keep `backlog` messages for a slow subscriber.
    #[must_use]
    pub fn new(backlog: usize) -> Self {
        Self {
            backlog,
            boxes: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<InstanceId, Fanout<Message>>> {
        self.boxes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new subscriber to the messages addressed to `me` (and to every instance).
    #[must_use]
    pub fn subscribe(&self, me: &InstanceId) -> Subscription<Message> {
        let mut boxes = self.lock();
        boxes.retain(|_, fanout| fanout.subscribers() > 0);
        boxes
            .entry(me.clone())
            .or_insert_with(|| Fanout::new(self.backlog))
            .subscribe()
    }

    /// Whether this process has a subscriber for `to` (a message to nobody here need not
    /// be decoded).
    #[must_use]
    pub fn wants(&self, to: &Address) -> bool {
        let boxes = self.lock();
        match to {
            Address::Every => boxes.values().any(|f| f.subscribers() > 0),
            Address::Instance(id) => boxes.get(id).is_some_and(|f| f.subscribers() > 0),
        }
    }

    /// The instance ids with a subscriber here (a mailbox whose every subscription was
    /// dropped is forgotten: a bus stops listening on its channel).
    #[must_use]
    pub fn instances(&self) -> Vec<InstanceId> {
        let mut boxes = self.lock();
        boxes.retain(|_, fanout| fanout.subscribers() > 0);
        boxes.keys().cloned().collect()
    }

    /// Hands `message` to the subscribers of `to` in this process.
    pub fn deliver(&self, to: &Address, message: &Message) {
        let boxes = self.lock();
        match to {
            Address::Every => boxes.values().for_each(|f| f.send(message.clone())),
            Address::Instance(id) => {
                if let Some(f) = boxes.get(id) {
                    f.send(message.clone());
                }
            }
        }
    }

    /// Tells every subscriber that messages may have been lost.
    pub fn resync(&self) {
        self.lock().values().for_each(Fanout::resync);
    }
}
