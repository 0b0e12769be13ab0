//! Entry point of the browser bundle built by trunk: mounts the chat.

fn main() {
    #[cfg(target_arch = "wasm32")]
    asg_web::start();
}
