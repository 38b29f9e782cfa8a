//! The payloads both buses carry: `e` and an event; `m`, the address, a newline and the
//! message's JSON. An address is an instance id or `*` (every instance).

use snodo::bus::{Address, BusError, Event, InstanceId, Message};

/// What a payload carries.
#[derive(Debug)]
pub(crate) enum Inbound {
    Event(Event),
    Message(Address, String),
}

pub(crate) fn event(event: &Event) -> String {
    format!("e{}", event.encode())
}

pub(crate) fn address(to: &Address) -> &str {
    match to {
        Address::Every => "*",
        Address::Instance(id) => id.as_str(),
    }
}

/// The payload of a message, with its JSON checked for size.
pub(crate) fn message(to: &Address, message: &Message) -> Result<String, BusError> {
    let json = message.encode_checked()?;
    Ok(format!("m{}\n{json}", address(to)))
}

/// Reads a payload; `None` for anything this version does not know (ignored).
pub(crate) fn parse(payload: &str) -> Option<Inbound> {
    if let Some(event) = payload.strip_prefix('e') {
        return Event::decode(event).map(Inbound::Event);
    }
    let (to, json) = payload.strip_prefix('m')?.split_once('\n')?;
    let to = match to {
        "*" => Address::Every,
        id => Address::Instance(InstanceId::new(id).ok()?),
    };
    Some(Inbound::Message(to, json.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_read_back() {
        let e = Event::ResourceUpdated("a://b\nc".into());
        assert!(matches!(parse(&event(&e)), Some(Inbound::Event(x)) if x == e));
        let m = Message::Cancel {
            request: "1".into(),
            reason: None,
        };
        let to = Address::Instance(InstanceId::random());
        let Some(Inbound::Message(a, json)) = message(&to, &m).ok().as_deref().and_then(parse)
        else {
            panic!("a message payload does not read back");
        };
        assert_eq!(a, to);
        assert_eq!(Message::decode(&json), Some(m));
        assert!(parse("x").is_none());
        assert!(parse("mno newline").is_none());
        assert!(parse("mbad id\n{}").is_none());
    }
}
