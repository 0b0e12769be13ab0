//! The chat's view components, one small file each.

pub mod approval;
pub mod args;
pub mod banner;
pub mod chat;
pub mod composer;
pub mod grants;
pub mod markdown;
pub mod messages;
pub mod question;
pub mod rows;
pub mod shown;
pub mod sidebar;
