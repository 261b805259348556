//! The CSRF check as a type: a state-changing form reaches its handler only as [`Checked`], which is made only
//! after the form's `csrf` field matched the pages' token, and POST routes are registered only through [`post`],
//! which takes handlers of a [`Checked`] form. A new POST route without the check does not compile.

use super::App;
use axum::extract::{FromRequest, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// A form that carries the CSRF field the pages put in every state-changing form.
pub(super) trait CsrfField {
    /// The token the form came with.
    fn csrf(&self) -> &str;
}

/// A form whose CSRF token was checked.
pub(super) struct Checked<T>(pub T);

impl<T> FromRequest<Arc<App>> for Checked<T>
where
    T: DeserializeOwned + CsrfField + Send,
{
    type Rejection = Response;

    async fn from_request(req: Request, app: &Arc<App>) -> Result<Self, Response> {
        let axum::Form(form) = axum::Form::<T>::from_request(req, app)
            .await
            .map_err(IntoResponse::into_response)?;
        if !super::guard::same_secret(form.csrf(), &app.csrf) {
            return Err(super::routes::refused());
        }
        Ok(Checked(form))
    }
}

/// A POST route of `handler`, which takes the app and a [`Checked`] form.
pub(super) fn post<T, F, Fut>(handler: F) -> MethodRouter<Arc<App>>
where
    T: DeserializeOwned + CsrfField + Send + 'static,
    F: Fn(State<Arc<App>>, Checked<T>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    axum::routing::post(move |app: State<Arc<App>>, form: Checked<T>| handler(app, form))
}
