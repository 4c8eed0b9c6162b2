//! The application's own `tracing` events in the run's trace: a layer that,
//! while a simulated run records its trace on this thread, turns every event
//! it is given into a trace line of kind `app`, at the simulated time and
//! for the client whose node emitted it. `replay` adds it to its subscriber
//! (with its own filter: the user's targets, not zkcheck's), so the user's
//! log lines appear between zkcheck's, in the order they happened.
//!
//! The world installs the sink for the span of a run ([`install`]) and the
//! run ends by removing it. An event emitted while the world itself is
//! locked (zkcheck's own code, never the application's) is not recorded.

use super::shared::{trace, Shared, SimRecipe};
use std::cell::RefCell;
use std::fmt::Write as _;
use std::sync::{Mutex, Weak};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

type Sink = Box<dyn Fn(String)>;

thread_local! {
    /// Where this thread's running simulation records application events.
    static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

/// The layer `replay` adds to its subscriber.
pub struct AppEvents;

impl<S: Subscriber> Layer<S> for AppEvents {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        SINK.with(|sink| {
            if let Some(record) = sink.borrow().as_ref() {
                let mut text = format!("{}: ", event.metadata().target());
                event.record(&mut Fields(&mut text));
                record(text);
            }
        });
    }
}

/// Collects an event's fields as `message k=v ...`.
struct Fields<'a>(&'a mut String);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

/// Records this thread's application events into `world`'s trace until
/// [`uninstall`]; only when the world records a trace.
pub(super) fn install<R: SimRecipe>(world: Weak<Mutex<Shared<R>>>) {
    let record = move |text: String| {
        let Some(world) = world.upgrade() else {
            return;
        };
        let Ok(mut world) = world.try_lock() else {
            return; // zkcheck's own code, inside the world
        };
        world.read_clock();
        let node = madsim::runtime::Handle::try_current()
            .is_ok()
            .then(madsim::plugin::node);
        let client = world
            .clients
            .iter()
            .position(|slot| slot.node.is_some() && slot.node == node);
        trace!(world, client, App, "{text}");
    };
    SINK.with(|sink| *sink.borrow_mut() = Some(Box::new(record)));
}

pub(super) fn uninstall() {
    SINK.with(|sink| *sink.borrow_mut() = None);
}
