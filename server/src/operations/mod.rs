//! What keeps the server up and its callers in their place: who may call (access, caller), how many at once (capacity, connection), stopping (drain), and running as a container's pid 1 (init).

pub mod access;
pub mod caller;
pub mod capacity;
pub mod connection;
pub mod drain;
pub mod init;
pub mod signing;
