//! A `tracing` layer that keeps the fields of every `snodo::request` event, for the
//! current thread only (the tests run on current-thread runtimes).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::subscriber::DefaultGuard;
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};

/// One captured event: field name to its value as text (strings unquoted).
pub type Fields = BTreeMap<String, String>;

/// The events captured so far.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<Fields>>>);

impl Captured {
    /// Captures `snodo::request` events on this thread until the guard drops.
    pub fn start() -> (Self, DefaultGuard) {
        let captured = Self::default();
        let subscriber = tracing_subscriber::registry().with(Layer_(captured.clone()));
        (captured, tracing::subscriber::set_default(subscriber))
    }

    pub fn events(&self) -> Vec<Fields> {
        self.0.lock().unwrap().clone()
    }

    /// Waits (up to 2 s) until `n` events were captured, and returns them.
    pub async fn wait_for(&self, n: usize) -> Vec<Fields> {
        for _ in 0..200 {
            let events = self.events();
            if events.len() >= n {
                return events;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("expected {n} request events, got {:?}", self.events());
    }
}

struct Layer_(Captured);

struct Visitor<'a>(&'a mut Fields);

impl Visit for Visitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().into(), format!("{value:?}"));
    }
}

impl<S: Subscriber> Layer<S> for Layer_ {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() == snodo::REQUEST_TARGET {
            let mut fields = Fields::new();
            event.record(&mut Visitor(&mut fields));
            self.0.0.lock().unwrap().push(fields);
        }
    }
}
