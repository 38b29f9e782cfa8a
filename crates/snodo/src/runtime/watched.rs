//! The resource URIs this instance's `subscriptions/listen` streams watch: what a
//! runtime that serves another server's resources (a composition mount) subscribes to
//! at that server.

use std::collections::BTreeMap;

use tokio::sync::watch;

/// URI → how many open listen streams of this instance watch it.
pub(crate) type Counts = BTreeMap<String, usize>;

/// Held by a listen stream: its URIs count as watched until it is dropped.
#[derive(Debug)]
pub(crate) struct Watching {
    counts: watch::Sender<Counts>,
    uris: Vec<String>,
}

impl Watching {
    /// Counts `uris` (each once) as watched, until the result is dropped.
    pub(crate) fn new(counts: &watch::Sender<Counts>, uris: &[String]) -> Self {
        let mut uris = uris.to_vec();
        uris.sort();
        uris.dedup();
        if !uris.is_empty() {
            counts.send_modify(|c| {
                for u in &uris {
                    *c.entry(u.clone()).or_insert(0) += 1;
                }
            });
        }
        Self {
            counts: counts.clone(),
            uris,
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        if self.uris.is_empty() {
            return;
        }
        self.counts.send_modify(|c| {
            for u in &self.uris {
                if let Some(n) = c.get_mut(u) {
                    *n -= 1;
                    if *n == 0 {
                        c.remove(u);
                    }
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_while_held() {
        let tx = watch::channel(Counts::new()).0;
        let a = Watching::new(&tx, &["x://1".into(), "x://2".into(), "x://1".into()]);
        let b = Watching::new(&tx, &["x://1".into()]);
        assert_eq!(tx.borrow().get("x://1"), Some(&2));
        drop(a);
        assert_eq!(tx.borrow().get("x://1"), Some(&1));
        assert!(tx.borrow().get("x://2").is_none());
        drop(b);
        assert!(tx.borrow().is_empty());
    }
}
