//! Questions for a human: who may answer one, whether an answer fits
//! the question (its choices, its flat JSON schema, its URL mode), what
//! the model (or the MCP server) is told, and how a question offered by
//! a model or an MCP server is checked before anyone sees it. Pure.

use asg_shared::{Conversation, PendingApproval, Question, QuestionReply};
use serde_json::{Map, Value};

use crate::access::{self, can_continue};
use crate::choice::schema_problems;
use crate::principal::{Principal, Role};

/// The built-in tool the model asks a human with.
pub const ASK_HUMAN_TOOL: &str = "ask_human";

/// Longest question text accepted.
pub const MAX_QUESTION_BYTES: usize = 4_096;
/// Most choices a question may offer.
pub const MAX_CHOICES: usize = 50;
/// Most properties a question's schema may have.
pub const MAX_PROPERTIES: usize = 50;
/// Longest answer accepted (a string, or an object's JSON).
pub const MAX_ANSWER_BYTES: usize = 16 * 1024;

/// The URL-mode answer that says the person finished at the URL.
pub const URL_DONE: &str = "done";

/// May `principal` answer `question` (asked in `conversation`)? The
/// role it acts in (`None`: as the owner or a named answerer), or why not.
pub fn can_answer(
    principal: &Principal,
    conversation: &Conversation,
    pending: &PendingApproval,
    question: &Question,
    separate_approver: bool,
) -> Result<Option<Role>, String> {
    let own = pending
        .requested_by
        .as_ref()
        .is_some_and(|by| by.subject == principal.subject);
    if question.separate && own && !principal.is_anonymous() {
        return Err(format!(
            "{} asked this question and may not answer it (questions.separate_answerer: someone else must); it stays pending",
            principal.subject
        ));
    }
    if question.approvers_answer {
        return access::can_decide(principal, pending, separate_approver)
            .map(Some)
            .map_err(|refusal| {
                format!("this question was asked during an approved call: {refusal}")
            });
    }
    if question.answerers.is_empty() {
        return match can_continue(principal, conversation) {
            true => Ok(None),
            false => Err(format!(
                "only the principal that started conversation {} may answer its questions; {} may read it",
                conversation.id, principal.subject
            )),
        };
    }
    let listed =
        principal.is_anonymous() || question.answerers.iter().any(|name| principal.is_in(name));
    match listed {
        true => Ok(None),
        false => Err(format!(
            "{} may not answer this question: only {} may (questions.answerers); it stays pending",
            principal.subject,
            question.answerers.join(", ")
        )),
    }
}

/// Whether `principal` is among those `question` names as answerers
/// (so it may see the question without reading the conversation).
pub fn names_answerer(principal: &Principal, question: &Question) -> bool {
    !principal.is_anonymous() && question.answerers.iter().any(|name| principal.is_in(name))
}

/// Checks `reply` against `question`; the error names the problem (and
/// the field).
pub fn check_reply(question: &Question, reply: &QuestionReply) -> Result<(), String> {
    let QuestionReply::Accept { answer } = reply else {
        return Ok(());
    };
    if serde_json::to_string(answer).map_or(0, |text| text.len()) > MAX_ANSWER_BYTES {
        return Err(format!(
            "answer is longer than {MAX_ANSWER_BYTES} bytes; shorten it"
        ));
    }
    if question.url.is_some() {
        return match answer.as_str().map(str::trim) {
            Some(URL_DONE) => Ok(()),
            _ => Err(format!(
                "this question asks you to open a URL: answer \"{URL_DONE}\" when finished there, \
                 or {{\"action\": \"decline\"}}"
            )),
        };
    }
    if let Some(schema) = &question.schema {
        let Value::Object(fields) = answer else {
            return Err("answer must be an object with the fields of the question's schema".into());
        };
        return check_fields(schema, fields);
    }
    let Some(text) = answer.as_str() else {
        return Err("answer must be a string".into());
    };
    if text.trim().is_empty() {
        return Err("answer must not be empty".into());
    }
    if !question.choices.is_empty() && !question.choices.iter().any(|c| c == text) {
        return Err(format!(
            "answer must be one of {}; got {text:?}",
            question
                .choices
                .iter()
                .map(|c| format!("{c:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(())
}

/// `fields` against the question's schema, each problem named by its
/// field (`answer.environment: …`).
fn check_fields(schema: &Value, fields: &Map<String, Value>) -> Result<(), String> {
    let instance = Value::Object(fields.clone());
    let problems = schema_problems(schema, &instance, "answer")
        .map_err(|e| format!("the question's schema cannot be used to check answers: {e}"))?;
    match problems.is_empty() {
        true => Ok(()),
        false => Err(format!("invalid answer: {}", problems.join("; "))),
    }
}

/// What the asker (the model, through the tool result) is told.
pub fn reply_text(reply: &QuestionReply) -> String {
    match reply {
        QuestionReply::Accept {
            answer: Value::String(text),
        } => text.clone(),
        QuestionReply::Accept { answer } => answer.to_string(),
        QuestionReply::Decline => "The human declined to answer.".into(),
        QuestionReply::Cancel => "The human dismissed the question without answering.".into(),
    }
}

/// The question the model asks through [`ASK_HUMAN_TOOL`]'s arguments
/// (`question`, optional `choices` or `schema`), checked: the error says
/// what to fix, and is the call's result.
pub fn from_arguments(arguments: &Map<String, Value>) -> Result<Question, String> {
    let text = arguments
        .get("question")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or("ask_human needs a non-empty string `question`")?;
    if text.len() > MAX_QUESTION_BYTES {
        return Err(format!(
            "the question is longer than {MAX_QUESTION_BYTES} bytes; ask a shorter one"
        ));
    }
    let choices = match arguments.get("choices") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|c| c.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .filter(|c| c.len() <= MAX_CHOICES && c.iter().all(|c| !c.trim().is_empty()))
            .ok_or(format!(
                "`choices` must be at most {MAX_CHOICES} non-empty strings"
            ))?,
        Some(_) => return Err("`choices` must be an array of strings".into()),
    };
    let schema = match arguments.get("schema") {
        None | Some(Value::Null) => None,
        Some(schema) => Some(check_flat_schema(schema)?),
    };
    if schema.is_some() && !choices.is_empty() {
        return Err("give `choices` or `schema`, not both".into());
    }
    Ok(Question {
        text: text.to_string(),
        choices,
        schema,
        url: None,
        server: None,
        answerers: Vec::new(),
        approvers_answer: false,
        separate: false,
    })
}

/// What a property of a question's schema may say (MCP elicitation's
/// primitive schemas): no patterns, nesting or references.
const PROPERTY_KEYWORDS: [&str; 12] = [
    "type",
    "title",
    "description",
    "enum",
    "enumNames",
    "oneOf",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "format",
    "default",
];

/// A requested schema as MCP elicitation allows it: an object of flat
/// properties (string, number, integer, boolean; strings may carry
/// `enum`), nothing nested, no references.
pub fn check_flat_schema(schema: &Value) -> Result<Value, String> {
    let flat = "`schema` must be a flat object schema: {\"type\": \"object\", \"properties\": {name: {\"type\": \"string\"|\"number\"|\"integer\"|\"boolean\", ...}}}";
    let Some(object) = schema.as_object() else {
        return Err(flat.into());
    };
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return Err(flat.into());
    }
    let properties = object
        .get("properties")
        .and_then(Value::as_object)
        .filter(|p| !p.is_empty() && p.len() <= MAX_PROPERTIES)
        .ok_or(format!("{flat}, with 1 to {MAX_PROPERTIES} properties"))?;
    for (name, property) in properties {
        let kind = property.get("type").and_then(Value::as_str);
        if !matches!(kind, Some("string" | "number" | "integer" | "boolean")) {
            return Err(format!(
                "`schema.properties.{name}` must be a string, number, integer or boolean property"
            ));
        }
        let keywords = property.as_object().into_iter().flat_map(|p| p.keys());
        if let Some(other) = keywords
            .into_iter()
            .find(|k| !PROPERTY_KEYWORDS.contains(&k.as_str()))
        {
            return Err(format!(
                "`schema.properties.{name}.{other}` is not allowed in a question's schema (allowed: {})",
                PROPERTY_KEYWORDS.join(", ")
            ));
        }
    }
    if object.contains_key("$ref") || object.contains_key("$defs") {
        return Err(format!("{flat} without references"));
    }
    jsonschema::validator_for(schema)
        .map_err(|e| format!("`schema` is not a valid schema: {e}"))?;
    Ok(schema.clone())
}

/// The input schema of [`ASK_HUMAN_TOOL`] as offered to the model.
pub fn ask_human_input_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "What to ask the human, in one clear question."},
            "choices": {"type": "array", "items": {"type": "string"},
                "description": "Optional: the answer must be one of these."},
            "schema": {"type": "object",
                "description": "Optional: a flat JSON object schema (string, number, integer, boolean properties; enum allowed) the answer must match."}
        },
        "required": ["question"]
    })
}

/// What [`ASK_HUMAN_TOOL`] says of itself to the model.
pub const ASK_HUMAN_DESCRIPTION: &str = "Ask a human a question and wait for the answer: use it \
     when a value you need is missing or ambiguous (for example which environment, which name). \
     The answer comes back as this tool's result.";

#[cfg(test)]
mod tests;
