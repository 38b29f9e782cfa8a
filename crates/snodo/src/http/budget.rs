//! The byte budgets of answers (issue 37): how large one answer may be, and how many
//! bytes of large answers the endpoint holds, built and not yet written to their
//! clients.
//!
//! An answer is serialised once, into the bytes hyper writes. A large one (64 KiB and
//! more) is charged to the endpoint's total when it is built and released when hyper
//! drops its last byte, written or abandoned with its connection: the charge travels
//! inside the bytes themselves ([`Bytes::from_owner`]), so it follows them through
//! hyper's write queue without a copy. Small answers are not counted (a shared counter
//! touched by every request would cost more than the bytes it counts).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;

use crate::engine::Failure;
use crate::protocol::RpcError;

/// Answers from this size on are charged to the total.
pub(crate) const LARGE: usize = 64 * 1024;

/// One endpoint's answer budget.
#[derive(Debug)]
pub(crate) struct AnswerBudget {
    held: Arc<AtomicUsize>,
    max_answer: usize,
    max_buffered: usize,
}

impl AnswerBudget {
    pub(crate) fn new(max_answer: usize, max_buffered: usize) -> Self {
        Self {
            held: Arc::default(),
            max_answer,
            max_buffered,
        }
    }

    /// Bytes of large answers held now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// The answer `message`, charged to the total when it is large; the failure that
    /// replaces it when it is larger than one answer may be, or the total is spent.
    pub(crate) fn charge(&self, message: Bytes) -> Result<Bytes, Failure> {
        let n = message.len();
        if n < LARGE {
            return Ok(message);
        }
        if n > self.max_answer {
            return Err(too_large(
                n,
                self.max_answer,
                "the server's limit of one answer",
            ));
        }
        let max = self.max_buffered;
        let charged = self
            .held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                held.checked_add(n).filter(|total| *total <= max)
            })
            .is_ok();
        if !charged {
            return Err(Failure::Overloaded(RpcError::internal(format!(
                "Server overloaded: the answers waiting to be written to their clients would exceed {max} bytes; retry later"
            ))));
        }
        Ok(Bytes::from_owner(Charged {
            bytes: message,
            held: Arc::clone(&self.held),
        }))
    }
}

/// The failure of an answer of `n` bytes past a budget of `max` bytes.
pub(crate) fn too_large(n: usize, max: usize, budget: &str) -> Failure {
    Failure::Error(RpcError::internal(format!(
        "Internal error: the answer ({n} bytes) exceeds {budget} ({max} bytes)"
    )))
}

/// The bytes of a charged answer: the charge is released with them.
struct Charged {
    bytes: Bytes,
    held: Arc<AtomicUsize>,
}

impl AsRef<[u8]> for Charged {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Charged {
    fn drop(&mut self) {
        self.held.fetch_sub(self.bytes.len(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_answers_are_charged_until_their_bytes_are_dropped() {
        let budget = AnswerBudget::new(4 * LARGE, 3 * LARGE);
        let small = budget.charge(Bytes::from(vec![b'x'; 10]));
        assert!(small.is_ok());
        assert_eq!(budget.held(), 0);
        let a = budget.charge(Bytes::from(vec![b'x'; 2 * LARGE]));
        let a = a.ok().unwrap_or_default();
        assert_eq!(budget.held(), 2 * LARGE);
        // A slice (as hyper makes while writing) keeps the charge.
        let tail = a.slice(LARGE..);
        drop(a);
        assert_eq!(budget.held(), 2 * LARGE);
        assert!(matches!(
            budget.charge(Bytes::from(vec![b'x'; 2 * LARGE])),
            Err(Failure::Overloaded(_))
        ));
        drop(tail);
        assert_eq!(budget.held(), 0);
        assert!(matches!(
            budget.charge(Bytes::from(vec![b'x'; 5 * LARGE])),
            Err(Failure::Error(_))
        ));
        assert_eq!(budget.held(), 0);
    }
}
