//! The body of `GET /conversations/{id}`, serialized once per version of
//! a conversation: the engine hands out the same `Arc` until the next
//! save, so a body made for that `Arc` answers every GET of it (a
//! `quick_cache` cache bounded by the bodies' bytes). A version is recognised by
//! pointer: the cache holds a `Weak` of the `Arc` it was made for, which
//! keeps the address from being reused while the body is kept but not
//! the conversation itself: an old version, or one the read cache let
//! go, is freed at once rather than held beside its body, outside the
//! bytes the cache counts. A body whose version nobody holds any more
//! can answer no GET: it is dropped within [`ORPHANS_EVERY`], so the
//! bodies' memory goes back with the read cache's when the agent is idle.

use std::sync::{Arc, Weak};
use std::time::Duration;

use asg_shared::Conversation;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use quick_cache::Weighter;
use quick_cache::sync::Cache;
use uuid::Uuid;

use super::logging::ConversationTag;

/// How often bodies of versions nobody holds are dropped.
pub const ORPHANS_EVERY: Duration = Duration::from_secs(2);

/// Bodies of recently read conversations.
#[derive(Clone)]
pub struct RenderedBodies {
    cache: Arc<Cache<Uuid, Kept, BodyBytes>>,
}

/// A body and the version it was made for.
type Kept = Arc<(Weak<Conversation>, Bytes)>;

/// Weighs a kept body by its bytes.
#[derive(Clone)]
struct BodyBytes;

impl Weighter<Uuid, Kept> for BodyBytes {
    fn weight(&self, _: &Uuid, kept: &Kept) -> u64 {
        kept.1.len() as u64
    }
}

impl Default for RenderedBodies {
    /// Sized for the default read cache.
    fn default() -> Self {
        RenderedBodies::beside_read_cache(crate::config::DEFAULT_READ_CACHE_BYTES)
    }
}

impl RenderedBodies {
    /// Bodies for a read cache of `read_cache_bytes`
    /// (`limits.read_cache_bytes`): half as many bytes, a compact body
    /// being about half the weight the read cache gives its
    /// conversation; none when the read cache keeps none.
    pub fn beside_read_cache(read_cache_bytes: u64) -> RenderedBodies {
        RenderedBodies::new(read_cache_bytes / 2)
    }

    /// Keeps about `max_bytes` of bodies.
    pub fn new(max_bytes: u64) -> RenderedBodies {
        RenderedBodies {
            cache: Arc::new(Cache::with_weighter(
                crate::engine::estimated_items(max_bytes),
                max_bytes,
                BodyBytes,
            )),
        }
    }

    /// Drops, every [`ORPHANS_EVERY`] while this cache is in use, the
    /// bodies of versions nobody holds (needs a tokio runtime).
    pub fn start_dropping_orphans(&self) {
        let cache = Arc::downgrade(&self.cache);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(ORPHANS_EVERY).await;
                let Some(cache) = cache.upgrade() else {
                    return;
                };
                drop_orphans(&cache);
            }
        });
    }

    /// `{"conversation": …}` for this version, made at most once while
    /// it is kept.
    pub fn body(&self, conversation: &Arc<Conversation>) -> Result<Bytes, serde_json::Error> {
        if let Some(kept) = self.cache.get(&conversation.id)
            && std::ptr::eq(kept.0.as_ptr(), Arc::as_ptr(conversation))
        {
            return Ok(kept.1.clone());
        }
        #[derive(serde::Serialize)]
        struct Shown<'a> {
            conversation: &'a Conversation,
        }
        let body = Bytes::from(serde_json::to_vec(&Shown { conversation })?);
        self.cache.insert(
            conversation.id,
            Arc::new((Arc::downgrade(conversation), body.clone())),
        );
        Ok(body)
    }

    /// The 200 answer of `GET /conversations/{id}`.
    pub fn answer(&self, conversation: &Arc<Conversation>) -> Response {
        let body = match self.body(conversation) {
            Ok(body) => body,
            Err(error) => {
                tracing::error!(%error, "a conversation could not be serialized");
                return StatusCode::INTERNAL_SERVER_ERROR.into_response();
            }
        };
        let mut response = Response::new(Body::from(body));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response.extensions_mut().insert(ConversationTag {
            id: conversation.id,
            session_id: conversation.session_id.clone(),
        });
        response
    }
}

/// Drops the bodies whose version is gone: no GET can be answered
/// with them.
fn drop_orphans(cache: &Cache<Uuid, Kept, BodyBytes>) {
    cache.retain(|_, kept| kept.0.strong_count() > 0);
}

#[cfg(test)]
mod tests {
    use asg_shared::fixtures;

    use super::*;

    #[test]
    fn one_version_is_serialized_once_and_a_new_one_again() {
        let bodies = RenderedBodies::default();
        let first = Arc::new(fixtures::conversation());
        let a = bodies.body(&first).unwrap();
        let b = bodies.body(&first).unwrap();
        assert_eq!(
            a.as_ptr(),
            b.as_ptr(),
            "the same bytes answer the same version"
        );
        let mut changed = (*first).clone();
        changed
            .messages
            .push(fixtures::message(asg_shared::Role::User, "later").into());
        let changed = Arc::new(changed);
        let c = bodies.body(&changed).unwrap();
        let shown: serde_json::Value = serde_json::from_slice(&c).unwrap();
        assert_eq!(
            shown["conversation"]["messages"].as_array().unwrap().len(),
            changed.messages.len(),
            "a new version is serialized anew"
        );
        let same_as_reference =
            serde_json::to_value(serde_json::json!({"conversation": &*changed})).unwrap();
        assert_eq!(shown, same_as_reference);
    }

    #[test]
    fn a_kept_body_does_not_keep_its_conversation() {
        let bodies = RenderedBodies::default();
        let conversation = Arc::new(fixtures::conversation());
        let body = bodies.body(&conversation).unwrap();
        assert_eq!(
            Arc::strong_count(&conversation),
            1,
            "the cache holds no strong reference"
        );
        let again = bodies.body(&conversation).unwrap();
        assert_eq!(body.as_ptr(), again.as_ptr(), "still recognised");
        let id = conversation.id;
        drop(conversation);
        let later = Arc::new(Conversation {
            id,
            ..fixtures::conversation()
        });
        let fresh = bodies.body(&later).unwrap();
        assert_ne!(
            body.as_ptr(),
            fresh.as_ptr(),
            "another Arc of the same id is another version"
        );
    }

    #[test]
    fn bodies_get_half_the_read_cache_and_none_beside_no_read_cache() {
        let conversation = Arc::new(fixtures::conversation());
        let none = RenderedBodies::beside_read_cache(0);
        let first = none.body(&conversation).unwrap();
        let again = none.body(&conversation).unwrap();
        assert_ne!(first.as_ptr(), again.as_ptr(), "a body kept with no room");
        assert_eq!(
            RenderedBodies::beside_read_cache(32 << 20).cache.capacity(),
            16 << 20
        );
    }

    #[test]
    fn a_body_whose_version_is_gone_is_dropped_and_a_held_one_stays() {
        let bodies = RenderedBodies::default();
        let held = Arc::new(fixtures::conversation());
        let mut other = fixtures::conversation();
        other.id = Uuid::new_v4();
        let gone = Arc::new(other);
        bodies.body(&held).unwrap();
        bodies.body(&gone).unwrap();
        let gone_id = gone.id;
        drop(gone);

        drop_orphans(&bodies.cache);

        assert!(bodies.cache.get(&held.id).is_some(), "its version is held");
        assert!(bodies.cache.get(&gone_id).is_none(), "nobody holds it");
    }
}
