//! The question card: what the model (or a tool server) asks, and the
//! form to answer it — a button per choice, a form built from the
//! question's schema (text, number, yes/no, a button per enum value), a
//! link the person opens themselves (URL mode) then "Done", or one line
//! of text — with Decline beside it. The agent's refusal of an answer
//! (422) shows in the card, which stays.

use std::collections::BTreeMap;

use asg_shared::links::is_safe_url;
use asg_shared::rest::AnswerRequest;
use asg_shared::{PendingApproval, Question};
use leptos::prelude::*;
use serde_json::Value;
use uuid::Uuid;

use crate::components::markdown::Markdown;
use crate::logic::question::{Field, FieldKind, Form, answer, form};
use crate::state::AppState;

/// `.question-card` for one pending question.
#[component]
pub fn QuestionCard(pending: PendingApproval, question: Question) -> impl IntoView {
    let state = expect_context::<AppState>();
    let uuid = pending.uuid;
    let problem = RwSignal::new(None::<String>);
    let send = move |body: AnswerRequest| state.answer(uuid, body, problem);
    let asker = question
        .server
        .clone()
        .or(pending.remote_agent_name.clone())
        .map(|who| format!("asked by {who}"))
        .unwrap_or_else(|| "asked by the agent".into());
    view! {
        <section
            class="approval question-card"
            data-question=uuid.to_string()
            aria-labelledby="question-title"
        >
            <div class="approval-head">
                <span class="approval-icon" aria-hidden="true">"?"</span>
                <h2 id="question-title">"Question"</h2>
                <span class="chip">{asker}</span>
            </div>
            <Markdown text=question.text.clone() class="question-text markdown" />
            {move || {
                problem
                    .get()
                    .map(|p| view! { <p class="question-error args-error" role="alert">{p}</p> })
            }}
            {answer_form(uuid, form(&question), send)}
        </section>
    }
}

/// A body that answers with `value`.
fn answered(value: Value) -> AnswerRequest {
    AnswerRequest {
        answer: Some(value),
        action: None,
    }
}

/// The form for `form`, sending through `send`.
fn answer_form(
    uuid: Uuid,
    form: Form,
    send: impl Fn(AnswerRequest) + Copy + Send + Sync + 'static,
) -> AnyView {
    let state = expect_context::<AppState>();
    let busy = move || state.busy.get() > 0;
    let decline = move |_| {
        send(AnswerRequest {
            answer: None,
            action: Some("decline".into()),
        })
    };
    let decline_button = view! {
        <button type="button" class="btn" data-action="decline" disabled=busy on:click=decline>
            "Decline"
        </button>
    };
    match form {
        Form::Choices(choices) => view! {
            <div class="approval-actions question-choices">
                {choices
                    .into_iter()
                    .map(|choice| {
                        let (value, label) = (choice.clone(), choice.clone());
                        view! {
                            <button
                                type="button"
                                class="btn primary"
                                data-choice=choice
                                disabled=busy
                                on:click=move |_| send(answered(Value::from(value.clone())))
                            >
                                {label}
                            </button>
                        }
                    })
                    .collect_view()}
                {decline_button}
            </div>
        }
        .into_any(),
        Form::Url(url) => url_form(url, send, decline_button),
        Form::Text => text_form(uuid, send, decline_button),
        Form::Fields(fields) => fields_form(fields, send, decline_button),
    }
}

/// URL mode: the link (opened by the person, in a new tab), then Done.
fn url_form(
    url: String,
    send: impl Fn(AnswerRequest) + Copy + Send + Sync + 'static,
    decline: impl IntoView + 'static,
) -> AnyView {
    let state = expect_context::<AppState>();
    let busy = move || state.busy.get() > 0;
    let link = is_safe_url(&url).then(|| {
        view! {
            <a class="question-url" href=url.clone() target="_blank" rel="noopener noreferrer">
                {url.clone()}
            </a>
        }
    });
    view! {
        <p class="question-url-line">"Open this page yourself, then come back: " {link}</p>
        <div class="approval-actions">
            <button
                type="button"
                class="btn primary"
                data-action="done"
                disabled=busy
                on:click=move |_| send(answered(Value::from("done")))
            >
                "Done"
            </button>
            {decline}
        </div>
    }
    .into_any()
}

/// One line of text.
fn text_form(
    uuid: Uuid,
    send: impl Fn(AnswerRequest) + Copy + Send + Sync + 'static,
    decline: impl IntoView + 'static,
) -> AnyView {
    let state = expect_context::<AppState>();
    let text = RwSignal::new(String::new());
    let busy = move || state.busy.get() > 0 || text.with(|t| t.trim().is_empty());
    let submit = move || send(answered(Value::from(text.get_untracked())));
    view! {
        <div class="approval-actions">
            <input
                id=format!("answer-{uuid}")
                class="question-answer"
                type="text"
                placeholder="Your answer"
                aria-label="Your answer"
                prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))
                on:keydown=move |ev| {
                    if ev.key() == "Enter" {
                        submit();
                    }
                }
            />
            <button type="button" class="btn primary" data-action="answer" disabled=busy on:click=move |_| submit()>
                "Answer"
            </button>
            {decline}
        </div>
    }
    .into_any()
}

/// A form of fields from the question's schema.
fn fields_form(
    fields: Vec<Field>,
    send: impl Fn(AnswerRequest) + Copy + Send + Sync + 'static,
    decline: impl IntoView + 'static,
) -> AnyView {
    let state = expect_context::<AppState>();
    let values = RwSignal::new(BTreeMap::<String, String>::new());
    let problem = RwSignal::new(None::<String>);
    let busy = move || state.busy.get() > 0;
    let submit = {
        let fields = fields.clone();
        move |_| match answer(&fields, &values.get_untracked()) {
            Ok(value) => {
                problem.set(None);
                send(answered(value));
            }
            Err(message) => problem.set(Some(message)),
        }
    };
    view! {
        <div class="question-form">
            {fields.into_iter().map(|field| field_view(field, values)).collect_view()}
        </div>
        {move || problem.get().map(|p| view! { <p class="args-error" role="alert">{p}</p> })}
        <div class="approval-actions">
            <button type="button" class="btn primary" data-action="answer" disabled=busy on:click=submit>
                "Answer"
            </button>
            {decline}
        </div>
    }
    .into_any()
}

/// One field: its label, and an input of its kind writing into `values`.
fn field_view(field: Field, values: RwSignal<BTreeMap<String, String>>) -> impl IntoView {
    let name = field.name.clone();
    let set = {
        let name = name.clone();
        move |value: String| {
            values.update(|v| {
                v.insert(name.clone(), value);
            })
        }
    };
    let current = {
        let name = name.clone();
        move || values.with(|v| v.get(&name).cloned().unwrap_or_default())
    };
    let id = format!("field-{name}");
    let input = match field.kind {
        FieldKind::Choice(options) => {
            choice_input(options, field.label.clone(), name.clone(), set, current)
        }
        FieldKind::Boolean => view! {
            <input
                id=id.clone()
                type="checkbox"
                data-field=name.clone()
                prop:checked=move || current() == "true"
                on:change=move |ev| set(event_target_checked(&ev).to_string())
            />
        }
        .into_any(),
        FieldKind::Number { integer } => view! {
            <input
                id=id.clone()
                type="number"
                step=if integer { "1" } else { "any" }
                data-field=name.clone()
                // Set once, not kept in step with the typed text: while a
                // number is being typed ("1.") the browser reports it as
                // "", and writing that back would wipe what was typed.
                prop:value=current()
                on:input=move |ev| set(event_target_value(&ev))
            />
        }
        .into_any(),
        FieldKind::Text => view! {
            <input
                id=id.clone()
                type="text"
                data-field=name.clone()
                prop:value=current
                on:input=move |ev| set(event_target_value(&ev))
            />
        }
        .into_any(),
    };
    let required = field.required.then_some(" *");
    view! {
        <div class="question-field">
            <label for=id>{field.label.clone()}{required}</label>
            {input}
            {field.hint.map(|hint| view! { <small class="muted">{hint}</small> })}
        </div>
    }
}

/// A button per allowed value; the chosen one is highlighted.
fn choice_input(
    options: Vec<String>,
    label: String,
    name: String,
    set: impl Fn(String) + Clone + Send + Sync + 'static,
    current: impl Fn() -> String + Clone + Send + Sync + 'static,
) -> AnyView {
    view! {
        <span class="question-enum" role="group" aria-label=label>
            {options
                .into_iter()
                .map(|option| {
                    let (set, current, value) = (set.clone(), current.clone(), option.clone());
                    view! {
                        <button
                            type="button"
                            class="btn"
                            class:primary=move || current() == value
                            data-field=name.clone()
                            data-value=option.clone()
                            on:click=move |_| set(option.clone())
                        >
                            {option.clone()}
                        </button>
                    }
                })
                .collect_view()}
        </span>
    }
    .into_any()
}
