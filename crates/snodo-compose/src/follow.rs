//! A mount's resource subscriptions: the front URIs its listen streams watch
//! ([`Runtime::watched_resources`]) that are the mount's are subscribed at the source
//! (under the backend's URIs; again after each listing, as a new connection may not
//! know them), and the source's updates are announced to the front's listen streams
//! under the front's URIs ([`Runtime::notify_resource_updated`]).

use std::collections::BTreeSet;
use std::sync::Arc;

use snodo::Runtime;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

use crate::mirror::Forward;
use crate::mount::Status;

/// The backend URIs wanted now: watched front URIs under the mount's namespace that
/// its transforms admit.
fn wanted(front: &Runtime, fwd: &Forward) -> BTreeSet<String> {
    let t = &fwd.transforms;
    front
        .watched_resources()
        .borrow()
        .keys()
        .filter_map(|u| t.backend_uri(u))
        .filter(|u| t.admits_uri(u))
        .collect()
}

/// Runs until the mount goes (its status channel closes).
pub(crate) async fn follow(front: Runtime, fwd: Arc<Forward>, mut status: watch::Receiver<Status>) {
    let source = Arc::clone(&fwd.source);
    let Some(mut updates) = source.resource_updates() else {
        return;
    };
    let mut watched = front.watched_resources();
    let mut subscribed = BTreeSet::new();
    let mut listed = 0;
    loop {
        let generation = match &*status.borrow_and_update() {
            Status::Up { generation, .. } => Some(*generation),
            _ => None,
        };
        watched.borrow_and_update();
        if let Some(g) = generation {
            let want = wanted(&front, &fwd);
            let again = g != listed;
            listed = g;
            for u in want.iter().filter(|u| again || !subscribed.contains(*u)) {
                if let Err(e) = source.subscribe(u).await {
                    tracing::debug!(source = %source.name(), uri = %u, error = %e, "backend subscription refused");
                }
            }
            for u in subscribed.difference(&want) {
                if let Err(e) = source.unsubscribe(u).await {
                    tracing::debug!(source = %source.name(), uri = %u, error = %e, "backend unsubscription failed");
                }
            }
            subscribed = want;
        }
        tokio::select! {
            r = watched.changed() => if r.is_err() { return },
            r = status.changed() => if r.is_err() { return },
            u = updates.recv() => match u {
                Ok(uri) if fwd.transforms.admits_uri(&uri) => {
                    front.notify_resource_updated(&fwd.transforms.front_uri(&uri));
                }
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            },
        }
    }
}
