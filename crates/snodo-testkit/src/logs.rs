//! Log text captured from a `tracing` subscriber, for tests that read what was logged.

use std::io;
use std::sync::{Arc, Mutex, PoisonError};

/// A writer shared with a `tracing_subscriber::fmt` subscriber: everything written is
/// kept, and [`Captured::text`] reads it back.
///
/// ```
/// use snodo_testkit::logs::Captured;
///
/// let captured = Captured::default();
/// let subscriber = tracing_subscriber::fmt()
///     .with_writer(captured.clone())
///     .with_ansi(false)
///     .finish();
/// tracing::subscriber::with_default(subscriber, || tracing::info!("hello"));
/// assert!(captured.text().contains("hello"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Everything written so far, as text (invalid UTF-8 replaced).
    #[must_use]
    pub fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Self;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}
