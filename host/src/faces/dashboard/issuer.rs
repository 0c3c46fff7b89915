//! Signing a person in through the authorization server (OAuth mode with
//! `[auth] dashboard_client_id`): `GET /ui/sign-in/oauth` sends the
//! browser to the issuer with a fresh `state`, bound to the browser by a
//! cookie; the issuer sends it back to the redirect path with a code,
//! which [`BrowserSignIn`](crate::auth::browser::BrowserSignIn) trades for
//! an access token. The token is checked as any bearer token is, and the
//! sign-in that follows carries its principal (never the token) until the
//! token would have expired.
//!
//! The last step answers a page that moves on to `/ui/` itself rather
//! than a redirect: when the way back began on the issuer's site (its
//! sign-in form was submitted there), a browser withholds `SameSite=Strict`
//! cookies from every redirect of that navigation, so a `303` to `/ui/`
//! would arrive without the new session cookie and land on the sign-in
//! page again. The page's own navigation is same-site. (The Chromium test
//! signs in through such a form, and fails with a redirect here.)

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::signin::{LASTS, state_of};
use super::{Dashboard, html};
use crate::auth::browser::{PENDING_FOR, SignInError, refusal_code};
use crate::catalog::shown::shown;
use crate::sandbox::secrets::constant_time_eq;

/// Where a sign-in through the issuer starts.
pub const START: &str = "/ui/sign-in/oauth";

/// `GET /ui/sign-in/oauth`: off to the issuer.
pub(super) async fn start(
    State(ui): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Query(moved): Query<Moved>,
) -> Response {
    let Some(browser) = ui.auth.oauth().and_then(|o| o.browser()) else {
        return super::sign_in_page(&ui, StatusCode::NOT_FOUND, None);
    };
    // The state cookie must come back with the browser to the redirect
    // URI, which is on `resource`'s origin: start the sign-in there. Once:
    // behind a proxy that rewrites `Host`, the browser is there already.
    let here = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if !here.eq_ignore_ascii_case(browser.authority()) && !moved.moved {
        return super::see_other(format!("{}{START}?moved=true", browser.origin()), []);
    }
    let Some(started) = browser.start() else {
        return super::sign_in_page(
            &ui,
            StatusCode::INTERNAL_SERVER_ERROR,
            Some("The server could not start a sign-in."),
        );
    };
    if let Err(reason) = ui.sign_ins.begin(&started.state, &started.verifier, PENDING_FOR).await {
        return super::unkept(&ui, &reason);
    }
    let bound = ui.sign_ins.state_cookie(&started.state, browser.redirect_path(), PENDING_FOR);
    super::see_other(started.location, [bound])
}

/// `?moved=true`: the browser was sent to the resource's origin already.
#[derive(serde::Deserialize)]
pub(super) struct Moved {
    #[serde(default)]
    moved: bool,
}

/// What the issuer sends the browser back with.
#[derive(serde::Deserialize)]
pub(super) struct Back {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// The redirect path: the code traded, its token checked, the browser
/// signed in.
pub(super) async fn callback(
    State(ui): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Query(back): Query<Back>,
) -> Response {
    let Some(oauth) = ui.auth.oauth() else { return super::sign_in_page(&ui, StatusCode::NOT_FOUND, None) };
    let Some(browser) = oauth.browser() else { return super::sign_in_page(&ui, StatusCode::NOT_FOUND, None) };
    let cleared = ui.sign_ins.state_cleared(browser.redirect_path());
    let finished = async {
        let state = back.state.as_deref().ok_or(SignInError::UnknownState)?;
        // Only the browser that started this sign-in may finish it.
        if !state_of(&headers).is_some_and(|bound| constant_time_eq(bound.as_bytes(), state.as_bytes())) {
            return Err(SignInError::UnknownState);
        }
        // The `state` is spent whatever happens next.
        let verifier = ui.sign_ins.finish(state).await.map_err(SignInError::Unkept)?;
        if let Some(error) = &back.error {
            let description = back.error_description.as_deref().map(shown);
            return Err(SignInError::Refused { error: refusal_code(error), description });
        }
        let verifier = verifier.ok_or(SignInError::UnknownState)?;
        let code = back.code.as_deref().filter(|c| !c.is_empty()).ok_or(SignInError::NoCode)?;
        let exchanged = browser.exchange(&verifier, code).await?;
        let principal = oauth.authenticate(&exchanged.access_token).await.map_err(SignInError::Token)?;
        // As long as the token holds: its `exp`, and `expires_in` when the
        // issuer says (at most 12 hours).
        let said = exchanged.expires_in.filter(|s| *s > 0).map_or(LASTS, Duration::from_secs);
        let lasts = principal.left().min(said).min(LASTS);
        if lasts.is_zero() {
            return Err(SignInError::Token(crate::auth::tokens::Rejected::Expired));
        }
        Ok((principal, lasts))
    };
    match finished.await {
        Ok((principal, lasts)) => {
            let subject = shown(&principal.subject);
            let client = principal.client_id.as_deref().map(shown).unwrap_or_default();
            // A sign-in this browser had before ends: one browser, one sign-in.
            let _ = ui.sign_ins.sign_out(&headers).await;
            let session = match ui.sign_ins.sign_in_as(principal, lasts).await {
                Ok(session) => session,
                Err(reason) => return super::unkept(&ui, &reason),
            };
            tracing::info!(%subject, %client, "signed in to the dashboard through the authorization server");
            let mut response = html(StatusCode::OK, SIGNED_IN.to_owned());
            for cookie in [session, cleared] {
                if let Ok(cookie) = HeaderValue::from_str(&cookie) {
                    response.headers_mut().append(header::SET_COOKIE, cookie);
                }
            }
            response
        }
        Err(refused) => {
            ui.host.metrics().auth_refused(refused.label());
            tracing::info!(reason = refused.label(), why = %refused, "refused a dashboard sign-in");
            let mut response = super::sign_in_page(&ui, StatusCode::UNAUTHORIZED, Some(&refused.to_string()));
            if let Ok(cookie) = HeaderValue::from_str(&cleared) {
                response.headers_mut().append(header::SET_COOKIE, cookie);
            }
            response.into_response()
        }
    }
}

/// The page a finished sign-in answers: it moves on to the dashboard (a
/// same-site navigation, which carries the new cookie).
const SIGNED_IN: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="0;url=/ui/">
<title>Signed in · Quiver</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/assets/app.css">
</head>
<body>
<main class="signin">
  <h1>Signed in</h1>
  <p><a href="/ui/" id="open-dashboard">Open the dashboard</a></p>
</main>
</body>
</html>
"#;
