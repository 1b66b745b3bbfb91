//! One body per behaviour; [`contract!`] runs each against both backends.

mod backend;
mod cluster;
mod journal;
mod paging;
mod records;
mod request_keys;
mod scoping;
mod skills;
mod start;
mod templates;
mod turns;
mod vaults;

/// For each named `async fn name(backend: &Backend)`, a module `name` with a
/// `sqlite` and a `postgres` test running it.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    let backend = $crate::suite::backend::Backend::sqlite().await;
                    super::$name(&backend).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    let Some(backend) = $crate::suite::backend::Backend::postgres().await else { return };
                    super::$name(&backend).await;
                }
            }
        )*
    };
}
pub(crate) use contract;
