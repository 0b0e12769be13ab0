//! The chat's state (signals shared through the Leptos context) and the
//! actions that change it: select, create, send, decide, refresh. Actions
//! call [`crate::api`] and apply answers and live events with
//! [`crate::logic::events`] (the selected conversation) and
//! [`crate::logic::inbox`] (approvals and statuses of every conversation).

use asg_shared::events::ConversationEvent;
use asg_shared::rest::{
    AnswerRequest, ConversationList, ConversationResponse, ConversationSummary, ToolInfo,
};
use asg_shared::{Conversation, PendingApproval};
use leptos::html::Textarea;
use leptos::prelude::*;
use leptos::task::spawn_local;
use uuid::Uuid;

use crate::api::{self, LiveEvents, LiveStatus};
use crate::logic::auth::{AuthState, RESEND_KEY, Resend, login_url};
use crate::logic::choices::{Choice, edit_refusal, request_body};
use crate::logic::errors::{self, ErrorKind, RequestError, UserError};
use crate::logic::events::{apply_event, merge_conversation};
use crate::logic::inbox::{apply_inbox_event, overlay_pending};
use crate::logic::pages::{Paging, append_page, merge_first_page};
use crate::logic::url;

/// Everything the views read, plus the live subscription.
#[derive(Clone, Copy)]
pub struct AppState {
    /// Sidebar list, newest first: the pages loaded so far.
    pub conversations: RwSignal<Vec<ConversationSummary>>,
    /// The sidebar's paging: the next page's cursor, a fetch running.
    pub paging: RwSignal<Paging>,
    /// Pending approvals across conversations.
    pub approvals: RwSignal<Vec<PendingApproval>>,
    /// The agent's tools (shown on the empty screen).
    pub tools: RwSignal<Vec<ToolInfo>>,
    /// The selected conversation's id (also in the URL).
    pub selected: RwSignal<Option<Uuid>>,
    /// The selected conversation as last known.
    pub conversation: RwSignal<Option<Conversation>>,
    /// Requests of this tab that wait for a turn (send, decide).
    pub busy: RwSignal<u32>,
    /// A turn is running, as the live events tell (any client's).
    pub turn_running: RwSignal<bool>,
    /// The error banner.
    pub error: RwSignal<Option<UserError>>,
    /// The live event stream of the selected conversation.
    pub live: RwSignal<Option<LiveStatus>>,
    /// The operator inbox stream (approvals of every conversation).
    pub inbox_live: RwSignal<Option<LiveStatus>>,
    /// Sign-in state and the user's roles.
    pub auth: RwSignal<AuthState>,
    /// The composer's text.
    pub draft: RwSignal<String>,
    /// The composer, to focus it.
    pub composer: NodeRef<Textarea>,
    subscription: StoredValue<Option<LiveEvents>, LocalStorage>,
    inbox: StoredValue<Option<LiveEvents>, LocalStorage>,
    list_refresh: StoredValue<(bool, bool)>,
}

impl AppState {
    /// Fresh state; nothing is loaded yet.
    pub fn new() -> AppState {
        AppState {
            conversations: RwSignal::new(Vec::new()),
            paging: RwSignal::new(Paging::default()),
            approvals: RwSignal::new(Vec::new()),
            tools: RwSignal::new(Vec::new()),
            selected: RwSignal::new(None),
            conversation: RwSignal::new(None),
            busy: RwSignal::new(0),
            turn_running: RwSignal::new(false),
            error: RwSignal::new(None),
            live: RwSignal::new(None),
            inbox_live: RwSignal::new(None),
            auth: RwSignal::new(AuthState::Unknown),
            draft: RwSignal::new(String::new()),
            composer: NodeRef::new(),
            subscription: StoredValue::new_local(None),
            inbox: StoredValue::new_local(None),
            list_refresh: StoredValue::new((false, false)),
        }
    }

    /// True while the agent works for this conversation.
    pub fn working(&self) -> bool {
        self.busy.get() > 0 || self.turn_running.get()
    }

    /// Shows an error in the banner. A "sign in required" answer while
    /// login is configured means the session ended: the chat shows Sign in.
    pub fn report(&self, error: UserError) {
        if error.kind == ErrorKind::SignInRequired
            && self.auth.with_untracked(AuthState::login_configured)
        {
            self.auth.set(AuthState::SignedOut);
        }
        self.error.set(Some(error));
    }

    fn report_request(&self, error: &RequestError) {
        self.report(errors::describe(error));
    }

    /// Finds out who is signed in, then (unless sign-in is needed first)
    /// loads the data and sends a message kept across a sign-in again.
    pub fn start(&self) {
        let this = *self;
        spawn_local(async move {
            let auth = match api::auth_me().await {
                Ok(me) if me.login => AuthState::SignedIn(me),
                // The web server has no login.
                Ok(_) => AuthState::NoLogin {
                    me: api::agent_me().await.ok(),
                },
                Err(error) if error.status() == Some(401) => AuthState::SignedOut,
                // An older web server (404 without login).
                Err(_) => AuthState::NoLogin {
                    me: api::agent_me().await.ok(),
                },
            };
            let signed_out = auth == AuthState::SignedOut;
            this.auth.set(auth);
            if signed_out {
                return;
            }
            this.load();
            this.resend_after_sign_in();
        });
    }

    /// Sends the browser to the provider's sign-in, coming back to this
    /// page.
    pub fn sign_in(&self) {
        let location = window().location();
        let back = format!(
            "{}{}",
            location.pathname().unwrap_or_else(|_| "/".into()),
            location.search().unwrap_or_default()
        );
        let _ = location.set_href(&login_url(&back));
    }

    /// Signs in and then sends `message` into `conversation` again (an MCP
    /// server asked for a signed-in user). The message waits in
    /// sessionStorage across the redirect.
    pub fn sign_in_and_resend(&self, conversation: Uuid, message: String) {
        if let Ok(Some(storage)) = window().session_storage() {
            let resend = Resend {
                conversation_id: conversation,
                message,
            };
            let _ = storage.set_item(RESEND_KEY, &resend.to_storage());
        }
        self.set_url(Some(conversation), false);
        self.sign_in();
    }

    /// After a sign-in: the kept message, if any, is sent again (once).
    fn resend_after_sign_in(&self) {
        if !matches!(self.auth.get_untracked(), AuthState::SignedIn(_)) {
            return;
        }
        let Ok(Some(storage)) = window().session_storage() else {
            return;
        };
        let kept = storage.get_item(RESEND_KEY).ok().flatten();
        let _ = storage.remove_item(RESEND_KEY);
        if let Some(resend) = kept.as_deref().and_then(Resend::from_storage) {
            self.select(Some(resend.conversation_id), false);
            self.send_text(resend.message);
        }
    }

    /// Ends the session at the web server (which revokes the tokens) and
    /// follows it to the provider's sign-out page, if it has one.
    pub fn sign_out(&self) {
        let this = *self;
        spawn_local(async move {
            match api::logout().await {
                Ok(next) => {
                    let _ = window().location().set_href(&next);
                }
                Err(error) => this.report_request(&error),
            }
        });
    }

    /// Loads the list, the pending approvals and the tools, follows the
    /// inbox, and opens the conversation named in the URL.
    fn load(&self) {
        self.refresh_list();
        self.follow_inbox();
        let this = *self;
        spawn_local(async move {
            if let Ok(list) = api::list_tools().await {
                this.tools.set(list.tools);
            }
        });
        let search = window().location().search().unwrap_or_default();
        if let Some(id) = url::conversation_from_query(&search) {
            self.select(Some(id), false);
        }
    }

    /// Fetches the sidebar list and the pending approvals. Calls that come
    /// while a refresh runs are folded into one more refresh after it.
    pub fn refresh_list(&self) {
        let (running, _) = self.list_refresh.get_value();
        if running {
            self.list_refresh.set_value((true, true));
            return;
        }
        self.list_refresh.set_value((true, false));
        let this = *self;
        spawn_local(async move {
            loop {
                this.load_list().await;
                let (_, again) = this.list_refresh.get_value();
                if !again {
                    break;
                }
                this.list_refresh.set_value((true, false));
            }
            this.list_refresh.set_value((false, false));
        });
    }

    /// One fetch of the sidebar list's first page, and of the pending
    /// approvals (every page) unless the live inbox keeps them (a listing
    /// may be older than the inbox's last event, so the inbox's approvals
    /// are laid over it).
    async fn load_list(&self) {
        let inbox_live = self.inbox_live.get_untracked() == Some(LiveStatus::Live);
        let approvals = async {
            if inbox_live {
                None
            } else {
                Some(api::list_approvals().await)
            }
        };
        let (list, approvals) = futures::join!(api::list_conversations(None), approvals);
        // The inbox may have gone live (and delivered newer approvals) meanwhile.
        if let Some(Ok(approvals)) = approvals
            && self.inbox_live.get_untracked() != Some(LiveStatus::Live)
        {
            self.approvals.set(approvals);
        }
        match list {
            Ok(list) => {
                self.take_first_page(list);
                self.clear_error_of(&[ErrorKind::AgentUnreachable, ErrorKind::Offline]);
            }
            Err(error) => self.report_request(&error),
        }
    }

    /// Lays the list's first page over the sidebar, keeping the older
    /// pages loaded.
    fn take_first_page(&self, mut list: ConversationList) {
        self.approvals
            .with_untracked(|a| overlay_pending(&mut list.conversations, a));
        self.paging.update(|paging| {
            self.conversations.update(|current| {
                merge_first_page(current, paging, list.conversations, list.next_cursor);
            });
        });
    }

    /// Appends the next page of the sidebar list (scrolled near its end,
    /// or "Load more"); nothing while one is fetched or when none is left.
    pub fn load_more(&self) {
        if !self.paging.with_untracked(|p| p.has_more() && !p.loading) {
            return;
        }
        let mut started = None;
        self.paging.update(|paging| started = paging.start_next());
        let Some(cursor) = started else {
            return;
        };
        let this = *self;
        spawn_local(async move {
            match api::list_conversations(Some(&cursor)).await {
                Ok(mut page) => {
                    this.approvals
                        .with_untracked(|a| overlay_pending(&mut page.conversations, a));
                    this.paging.update(|paging| {
                        this.conversations.update(|list| {
                            append_page(
                                list,
                                paging,
                                &cursor,
                                page.conversations,
                                page.next_cursor,
                            );
                        });
                    });
                }
                Err(error) => {
                    this.paging.update(Paging::failed);
                    this.report_request(&error);
                }
            }
        });
    }

    /// Follows the operator inbox for the whole session: the pending count
    /// and the sidebar change when any client raises or decides an
    /// approval. Without it (an agent that does not serve `/events`), the
    /// list still reloads on the selected conversation's events and on
    /// focus.
    fn follow_inbox(&self) {
        let this = *self;
        let inbox = api::subscribe_inbox(
            move |event| {
                let mut refresh = false;
                this.approvals.update(|approvals| {
                    this.conversations.update(|list| {
                        refresh = apply_inbox_event(approvals, list, event);
                    });
                });
                if refresh {
                    this.refresh_list();
                }
            },
            move |status| {
                if this.inbox_live.get_untracked() != Some(status) {
                    this.inbox_live.set(Some(status));
                }
            },
            // An event this version cannot read is skipped; the next
            // `pending` event resyncs.
            |_| {},
        );
        self.inbox.set_value(Some(inbox));
    }

    fn clear_error_of(&self, kinds: &[ErrorKind]) {
        if self
            .error
            .with_untracked(|e| e.as_ref().is_some_and(|e| kinds.contains(&e.kind)))
        {
            self.error.set(None);
        }
    }

    /// Selects a conversation (or none, for a new one): loads it, follows
    /// its live events and puts its id in the URL (`push` adds a history
    /// entry; otherwise the current one is replaced).
    pub fn select(&self, id: Option<Uuid>, push: bool) {
        self.set_url(id, push);
        if self.selected.get_untracked() == id && id.is_some() {
            return;
        }
        self.subscription.set_value(None);
        self.selected.set(id);
        self.conversation.set(None);
        self.turn_running.set(false);
        self.live.set(None);
        let Some(id) = id else {
            return;
        };
        self.follow(id);
        let this = *self;
        spawn_local(async move {
            match api::get_conversation(id).await {
                Ok(response) => this.take(response.conversation),
                Err(error) => {
                    if this.selected.get_untracked() != Some(id) {
                        return;
                    }
                    this.report_request(&error);
                    if error.status() == Some(404) || error.status() == Some(400) {
                        this.select(None, false);
                    }
                }
            }
        });
    }

    fn follow(&self, id: Uuid) {
        let this = *self;
        let current = move || this.selected.get_untracked() == Some(id);
        let subscription = api::subscribe(
            id,
            move |event| {
                if current() {
                    this.apply(event);
                }
            },
            move |status| {
                if current() && this.live.get_untracked() != Some(status) {
                    this.live.set(Some(status));
                }
            },
            move |problem| {
                if current() {
                    this.report(UserError {
                        kind: ErrorKind::Other,
                        title: "Unexpected live event".into(),
                        detail: problem,
                    });
                }
            },
        );
        self.subscription.set_value(Some(subscription));
    }

    fn apply(&self, event: ConversationEvent) {
        let is_snapshot = matches!(event, ConversationEvent::Snapshot { .. });
        let mut effects = Default::default();
        self.conversation
            .update(|conversation| effects = apply_event(conversation, event));
        if is_snapshot {
            self.clear_error_of(&[ErrorKind::AgentUnreachable, ErrorKind::Offline]);
        }
        if let Some(working) = effects.working {
            self.turn_running.set(working);
        }
        if let Some(error) = effects.turn_error {
            // The request of this tab reports its own failure.
            if self.busy.get_untracked() == 0 {
                self.report(errors::turn_failure(&error));
            }
        }
        if effects.refresh_list {
            self.refresh_list();
        }
    }

    /// Takes a conversation from a REST answer if it is the selected one.
    fn take(&self, conversation: Conversation) {
        if self.selected.get_untracked() == Some(conversation.id) {
            self.conversation
                .update(|current| _ = merge_conversation(current, conversation));
        }
    }

    fn set_url(&self, id: Option<Uuid>, push: bool) {
        let window = window();
        let location = window.location();
        let search = location.search().unwrap_or_default();
        if url::conversation_from_query(&search) == id {
            return;
        }
        let target = url::url_for(
            &location.pathname().unwrap_or_default(),
            &location.hash().unwrap_or_default(),
            id,
        );
        if let Ok(history) = window.history() {
            let _ = if push {
                history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&target))
            } else {
                history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&target))
            };
        }
    }

    /// Starts a new conversation: clears the selection; the conversation is
    /// created with the first message.
    pub fn new_conversation(&self) {
        self.select(None, true);
        self.error.set(None);
        self.focus_composer();
    }

    /// Puts the keyboard focus in the composer.
    pub fn focus_composer(&self) {
        let composer = self.composer;
        request_animation_frame(move || {
            if let Some(element) = composer.get_untracked() {
                let _ = element.focus();
            }
        });
    }

    /// Sends the composer's text: into the selected conversation, or into a
    /// new one created first (so its live events show the turn as it runs).
    pub fn send(&self) {
        // The textarea's own value, in case it was filled without input
        // events.
        let text = self
            .composer
            .get_untracked()
            .map(|element| element.value())
            .unwrap_or_else(|| self.draft.get_untracked());
        let creating = self.selected.get_untracked().is_none() && self.busy.get_untracked() > 0;
        if text.trim().is_empty() || creating {
            return;
        }
        self.draft.set(String::new());
        self.send_text(text);
    }

    /// Sends `text` into the selected conversation, or into a new one.
    fn send_text(&self, text: String) {
        self.error.set(None);
        self.busy.update(|b| *b += 1);
        let this = *self;
        spawn_local(async move {
            let id = match this.selected.get_untracked() {
                Some(id) => Ok(id),
                None => api::create_conversation().await.map(|created| {
                    let id = created.conversation.id;
                    this.select(Some(id), true);
                    this.take(created.conversation);
                    this.refresh_list();
                    id
                }),
            };
            let outcome = match id {
                Ok(id) => api::send_message(id, text.clone()).await,
                Err(error) => Err(error),
            };
            this.busy.update(|b| *b -= 1);
            let failed = outcome.is_err();
            this.finish(outcome);
            if failed {
                this.restore_draft(&text);
            }
        });
    }

    /// After a send that failed before the message was recorded, puts the
    /// text back into an empty composer so nothing is lost.
    fn restore_draft(&self, text: &str) {
        let failed_before_recording = self.error.with_untracked(|e| {
            e.as_ref().is_some_and(|e| {
                matches!(
                    e.kind,
                    ErrorKind::AgentUnreachable
                        | ErrorKind::Offline
                        | ErrorKind::WaitingApproval
                        | ErrorKind::Closed
                        | ErrorKind::Invalid
                )
            })
        });
        if failed_before_recording && self.draft.get_untracked().is_empty() {
            self.draft.set(text.to_string());
        }
    }

    /// Decides one pending approval (each is decided on its own). With
    /// `refused`, a 422 (edited arguments the agent would not take) is
    /// shown there, in the editor, instead of the banner, and the approval
    /// stays pending.
    pub fn decide(
        &self,
        approval: Uuid,
        choice: Choice,
        refused: Option<RwSignal<Option<String>>>,
    ) {
        if self.busy.get_untracked() > 0 {
            return;
        }
        self.error.set(None);
        self.busy.update(|b| *b += 1);
        let this = *self;
        spawn_local(async move {
            let outcome = api::decide(approval, request_body(choice)).await;
            this.busy.update(|b| *b -= 1);
            if let (Err(error), Some(refused)) = (&outcome, refused)
                && let Some(message) = edit_refusal(error)
            {
                refused.set(Some(message));
                return;
            }
            this.finish(outcome);
        });
    }

    /// Answers question `uuid`; a refusal (an answer that does not fit,
    /// 422) shows in `refused`, and the question stays.
    pub fn answer(&self, uuid: Uuid, body: AnswerRequest, refused: RwSignal<Option<String>>) {
        if self.busy.get_untracked() > 0 {
            return;
        }
        self.error.set(None);
        self.busy.update(|b| *b += 1);
        let this = *self;
        spawn_local(async move {
            let outcome = api::answer(uuid, body).await;
            this.busy.update(|b| *b -= 1);
            if let Err(error) = &outcome
                && let Some(message) = edit_refusal(error)
            {
                refused.set(Some(message));
                return;
            }
            refused.set(None);
            this.finish(outcome);
        });
    }

    /// Revokes the selected conversation's remembered approvals of `tool`.
    pub fn revoke_grant(&self, tool: String) {
        let Some(id) = self.selected.get_untracked() else {
            return;
        };
        self.error.set(None);
        let this = *self;
        spawn_local(async move {
            match api::revoke_grant(id, &tool).await {
                Ok(response) => this.take(response.conversation),
                Err(error) => this.report_request(&error),
            }
        });
    }

    /// Applies the answer of a turn-running request (send, decide).
    fn finish(&self, outcome: Result<ConversationResponse, RequestError>) {
        match outcome {
            Ok(response) => self.take(response.conversation),
            Err(error) => {
                if let Some(conversation) = error.conversation() {
                    self.take(conversation.clone());
                }
                let shown = errors::describe(&error);
                let refresh = shown.needs_refresh();
                self.report(shown);
                if refresh && let Some(id) = self.selected.get_untracked() {
                    let this = *self;
                    spawn_local(async move {
                        if let Ok(response) = api::get_conversation(id).await {
                            this.take(response.conversation);
                        }
                    });
                }
            }
        }
        self.refresh_list();
    }

    /// Retries after a connection problem: reloads the list and the
    /// selected conversation.
    pub fn retry(&self) {
        self.error.set(None);
        self.refresh_list();
        if let Some(id) = self.selected.get_untracked() {
            self.selected.set(None);
            self.select(Some(id), false);
        }
    }
}
