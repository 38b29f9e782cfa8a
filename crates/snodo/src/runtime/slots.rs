//! [`Slots`]: what extensions attach to the runtime, a builder or a tool, one value per
//! type. The description names no extension: each keeps its own types in a slot and
//! reads them back through accessors in its own module.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type Value = Arc<dyn Any + Send + Sync>;

/// A typed map: at most one value per type, shared (cloning the map clones `Arc`s).
#[derive(Clone, Default)]
pub(crate) struct Slots {
    fixed: HashMap<TypeId, Value>,
    /// Values made on first use ([`Slots::get_or_init`]), after the map was frozen.
    late: Arc<Mutex<HashMap<TypeId, Value>>>,
}

impl std::fmt::Debug for Slots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slots")
            .field("len", &self.fixed.len())
            .finish_non_exhaustive()
    }
}

impl Slots {
    /// Puts `value` in its type's slot, replacing what was there.
    pub(crate) fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.fixed.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T`, if one was put.
    pub(crate) fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.fixed
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref())
    }

    /// Takes the value of type `T` out (a clone when it is shared).
    pub(crate) fn take<T: Any + Send + Sync + Clone>(&mut self) -> Option<T> {
        let value = self.fixed.remove(&TypeId::of::<T>())?;
        value.downcast::<T>().ok().map(Arc::unwrap_or_clone)
    }

    /// Changes the value of type `T` (its default when there is none).
    pub(crate) fn update<T: Any + Send + Sync + Clone + Default>(
        &mut self,
        f: impl FnOnce(&mut T),
    ) {
        let mut value = self.take::<T>().unwrap_or_default();
        f(&mut value);
        self.insert(value);
    }

    /// The value of type `T`: the one put, else the one made by `init` on first use
    /// (once per map and its clones).
    pub(crate) fn get_or_init<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Arc<T> {
        let id = TypeId::of::<T>();
        if let Some(v) = self
            .fixed
            .get(&id)
            .and_then(|v| Arc::clone(v).downcast().ok())
        {
            return v;
        }
        let mut late = match self.late.lock() {
            Ok(late) => late,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(v) = late.get(&id).and_then(|v| Arc::clone(v).downcast().ok()) {
            return v;
        }
        let made = Arc::new(init());
        late.insert(id, Arc::clone(&made) as Value);
        made
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_per_type() {
        let mut slots = Slots::default();
        assert!(slots.get::<u8>().is_none());
        slots.insert(1u8);
        slots.insert(2u8);
        slots.insert("s");
        assert_eq!(slots.get::<u8>(), Some(&2));
        assert_eq!(slots.get::<&str>(), Some(&"s"));
        slots.update(|v: &mut Vec<u8>| v.push(3));
        slots.update(|v: &mut Vec<u8>| v.push(4));
        assert_eq!(slots.get::<Vec<u8>>(), Some(&vec![3, 4]));
        assert_eq!(slots.take::<u8>(), Some(2));
        assert!(slots.get::<u8>().is_none());
    }

    #[test]
    fn late_values_are_made_once() {
        let slots = Slots::default();
        let copy = slots.clone();
        let a = slots.get_or_init(|| String::from("a"));
        let b = copy.get_or_init(|| String::from("b"));
        assert_eq!((a.as_str(), b.as_str()), ("a", "a"));
        let mut fixed = Slots::default();
        fixed.insert(String::from("put"));
        assert_eq!(fixed.get_or_init(|| String::from("made")).as_str(), "put");
    }
}
