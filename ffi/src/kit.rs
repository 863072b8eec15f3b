//! The kit: chat text, commands, greet-once audience, milestones, app
//! timers, and the per-broadcast tally.

use std::ffi::c_char;

use onair_core::kit::audience::{Audience, Greeting};
use onair_core::kit::commands::{Allowed, Commands, Denied, Invocation, Role};
use onair_core::kit::milestones::{Milestone, Milestones};
use onair_core::kit::tally::Tally;
use onair_core::kit::text;
use onair_core::proto::timers::{Tag, TimerError, Timers};
use onair_core::Event;

use crate::handle::{free, handles, hold, new_handle, Guarded, Lends};
use crate::onair_result::{self, *};
use crate::view::{event_in, onair_event, onair_str};
use crate::{boundary, boundary_or, bytes_in, out, str_in, string_out};

fn text_arg<'a>(p: *const c_char, len: usize) -> Result<&'a str, onair_result> {
    if p.is_null() {
        return Err(ONAIR_NULL_PARAMETER);
    }
    // SAFETY: (pointer, length) from the caller.
    unsafe { str_in(p, len) }
}

// ---- text ------------------------------------------------------------------------

/// A list of strings the caller owns (`onair_text_split`); free with
/// `onair_string_list_free`.
///
/// Threads: one thread at a time; a concurrent call gets ONAIR_BUSY
/// (`_len`: 0) and changes nothing. Its strings stay valid until it is
/// freed. Free it only when no other thread may call it.
#[derive(Debug)]
pub struct onair_string_list(Guarded<Vec<String>>);

impl Lends for Vec<String> {}

handles! {
    onair_string_list => Vec<String>,
    onair_audience => AudienceState,
    onair_commands => CommandsState,
    onair_milestones => MilestonesState,
    onair_timers => TimersState,
    onair_tally => Tally,
}

/// Splits chat text into messages the service accepts (at most 200 UTF-16
/// units each, cut only between grapheme clusters, at spaces when it can;
/// blank parts dropped) into a new list.
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 → ONAIR_INVALID_UTF8.
#[no_mangle]
pub unsafe extern "C" fn onair_text_split(
    text: *const c_char,
    len: usize,
    out_list: *mut *mut onair_string_list,
) -> onair_result {
    boundary(|| {
        let slot = out(out_list)?;
        let t = text_arg(text, len)?;
        *slot = new_handle::<onair_string_list>(text::split(t));
        Ok(())
    })
}

/// The number of strings in a list; NULL, or a call on it in flight on
/// another thread → 0.
#[no_mangle]
pub unsafe extern "C" fn onair_string_list_len(list: *const onair_string_list) -> usize {
    // SAFETY: checked pointer from this library.
    boundary_or(0, || unsafe { hold(list) }.map_or(0, |l| l.len()))
}

/// String `index` of a list, borrowed (not NUL-terminated), valid until
/// the list is freed.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER; `index` ≥ length →
/// ONAIR_OUT_OF_RANGE.
#[no_mangle]
pub unsafe extern "C" fn onair_string_list_get(
    list: *const onair_string_list,
    index: usize,
    out_str: *mut onair_str,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        let l = unsafe { hold(list) }?;
        let slot = out(out_str)?;
        let s = l.get(index).ok_or(ONAIR_OUT_OF_RANGE)?;
        *slot = onair_str::of(s);
        Ok(())
    })
}

/// Frees a list. NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn onair_string_list_free(list: *mut onair_string_list) {
    // SAFETY: NULL or a handle from this library, freed once.
    boundary_or((), || unsafe { free(list) })
}

/// Cuts `text` to at most `limit_utf16` UTF-16 units, ending with
/// `ellipsis` when cut (never inside a grapheme cluster), into a string the
/// caller owns (free with `onair_string_free`); `out_len` may be NULL.
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 → ONAIR_INVALID_UTF8.
#[no_mangle]
pub unsafe extern "C" fn onair_text_truncate(
    text: *const c_char,
    len: usize,
    limit_utf16: usize,
    ellipsis: *const c_char,
    ellipsis_len: usize,
    out_text: *mut *mut c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary(|| {
        let slot = out(out_text)?;
        let (t, e) = (text_arg(text, len)?, text_arg(ellipsis, ellipsis_len)?);
        string_out(text::truncate(t, limit_utf16, e), slot, out(out_len).ok());
        Ok(())
    })
}

/// The length of `text` in UTF-16 units (the unit of the 200 chat limit).
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 → ONAIR_INVALID_UTF8.
#[no_mangle]
pub unsafe extern "C" fn onair_text_utf16_len(
    text: *const c_char,
    len: usize,
    out_units: *mut usize,
) -> onair_result {
    boundary(|| {
        let slot = out(out_units)?;
        *slot = text::utf16_len(text_arg(text, len)?);
        Ok(())
    })
}

// ---- audience --------------------------------------------------------------------

/// Greet-once memory of one broadcast's audience (`onair_audience_new`).
///
/// Threads: one thread at a time; a concurrent call gets ONAIR_BUSY
/// (`_is_manager`: false; `_len`: 0) and changes nothing. Its
/// `onair_greeting` is valid until the next call on it by any thread not
/// refused with ONAIR_BUSY (`onair_commands_match` reading it counts). Free
/// it only when no other thread may call it.
#[derive(Debug)]
pub struct onair_audience(Guarded<AudienceState>);

impl Lends for AudienceState {}

/// The state behind an `onair_audience`.
#[derive(Debug)]
pub(crate) struct AudienceState {
    audience: Audience,
    greeting: Option<Greeting>,
}

/// Whom to greet (`onair_audience_on_event`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_greeting_kind {
    /// Nobody.
    ONAIR_GREETING_NONE = 0,
    /// The person's first join in this broadcast.
    ONAIR_GREETING_FIRST = 1,
    /// Their second join (the only welcome-back).
    ONAIR_GREETING_WELCOME_BACK = 2,
}

/// A greeting to send, borrowed from the audience until the next call on it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct onair_greeting {
    /// Whom to greet, if anyone.
    pub kind: onair_greeting_kind,
    /// Their id.
    pub user_id: onair_str,
    /// Their nickname, or NULL.
    pub nickname: onair_str,
    /// They are a manager.
    pub is_manager: bool,
}

fn audience_box(audience: Audience) -> *mut onair_audience {
    new_handle(AudienceState {
        audience,
        greeting: None,
    })
}

/// A new, empty audience memory. Free with `onair_audience_free`.
///
/// Errors: NULL `out_audience` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_audience_new(
    out_audience: *mut *mut onair_audience,
) -> onair_result {
    boundary(|| {
        // The out-parameter first: `*out(p)? = new` would build the handle
        // before the check and leak it on NULL.
        let slot = out(out_audience)?;
        *slot = audience_box(Audience::new());
        Ok(())
    })
}

/// An audience memory from `onair_audience_to_json`'s text (bytes; no NUL
/// needed). Call `onair_audience_start_broadcast` after loading.
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not a stored audience →
/// ONAIR_INVALID_STATE.
#[no_mangle]
pub unsafe extern "C" fn onair_audience_from_json(
    json: *const c_char,
    len: usize,
    out_audience: *mut *mut onair_audience,
) -> onair_result {
    boundary(|| {
        let slot = out(out_audience)?;
        if json.is_null() {
            return Err(ONAIR_NULL_PARAMETER);
        }
        // SAFETY: (pointer, length) from the caller.
        let bytes = unsafe { bytes_in(json.cast(), len) }?;
        *slot = audience_box(Audience::from_json(bytes).map_err(|_| ONAIR_INVALID_STATE)?);
        Ok(())
    })
}

/// Frees an audience memory. NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn onair_audience_free(audience: *mut onair_audience) {
    // SAFETY: NULL or a handle from this library, freed once.
    boundary_or((), || unsafe { free(audience) })
}

/// The audience's stored form, to save across a restart, into a string the
/// caller owns (free with `onair_string_free`); `out_len` may be NULL.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_audience_to_json(
    audience: *const onair_audience,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        let a = unsafe { hold(audience) }?;
        let slot = out(out_json)?;
        string_out(a.audience.to_json(), slot, out(out_len).ok());
        Ok(())
    })
}

/// Ties the memory to broadcast `live_id`: a new id starts over and sets
/// `*out_new` (may be NULL) to true; the same id keeps it.
///
/// Errors: NULL `audience` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_audience_start_broadcast(
    audience: *mut onair_audience,
    live_id: u64,
    out_new: *mut bool,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        let mut held = unsafe { hold(audience) }?;
        let a = &mut *held;
        let new = a.audience.start_broadcast(live_id);
        if let Ok(slot) = out(out_new) {
            *slot = new;
        }
        Ok(())
    })
}

/// Forgets the broadcast (after its `end` with `LIVE_ENDED`).
///
/// Errors: NULL `audience` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_audience_end_broadcast(
    audience: *mut onair_audience,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        unsafe { hold(audience) }?.audience.end_broadcast();
        Ok(())
    })
}

/// Records an event (any kind) and says whom to greet: a join that is the
/// person's first in this broadcast, or their second (welcome back).
/// `event` is a view from a decoder or a bot, still valid.
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; a view without an event →
/// ONAIR_NO_EVENT; this handle, or the bot or decoder the event came from,
/// in a call on another thread → ONAIR_BUSY (nothing recorded).
#[no_mangle]
pub unsafe extern "C" fn onair_audience_on_event(
    audience: *mut onair_audience,
    event: *const onair_event,
    out_greeting: *mut onair_greeting,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        let mut held = unsafe { hold(audience) }?;
        let a = &mut *held;
        let slot = out(out_greeting)?;
        // SAFETY: a view from this library.
        let ev = unsafe { event_in(event) }?;
        a.greeting = a.audience.on_event(&ev);
        *slot = match &a.greeting {
            None => onair_greeting {
                kind: onair_greeting_kind::ONAIR_GREETING_NONE,
                user_id: onair_str::NULL,
                nickname: onair_str::NULL,
                is_manager: false,
            },
            Some(g) => onair_greeting {
                kind: match g {
                    Greeting::First(_) => onair_greeting_kind::ONAIR_GREETING_FIRST,
                    Greeting::WelcomeBack(_) => onair_greeting_kind::ONAIR_GREETING_WELCOME_BACK,
                },
                user_id: onair_str::of(&g.user().id),
                nickname: onair_str::opt(g.user().nickname.as_deref()),
                is_manager: g.presence().is_manager,
            },
        };
        Ok(())
    })
}

/// Whether the person's latest join said they are a manager; NULL or
/// invalid arguments → false.
#[no_mangle]
pub unsafe extern "C" fn onair_audience_is_manager(
    audience: *const onair_audience,
    user_id: *const c_char,
    user_id_len: usize,
) -> bool {
    boundary_or(false, || {
        // SAFETY: checked pointer from this library.
        let (Ok(a), Ok(id)) = (unsafe { hold(audience) }, text_arg(user_id, user_id_len)) else {
            return false;
        };
        a.audience.is_manager(id)
    })
}

/// People remembered in this broadcast; NULL, or a call on it in flight
/// on another thread → 0.
#[no_mangle]
pub unsafe extern "C" fn onair_audience_len(audience: *const onair_audience) -> usize {
    // SAFETY: checked pointer from this library.
    boundary_or(0, || {
        unsafe { hold(audience) }.map_or(0, |a| a.audience.len())
    })
}

// ---- commands --------------------------------------------------------------------

/// A bot's chat commands (`onair_commands_new`): prefix, names, who may
/// run each, posters to ignore.
///
/// Threads: one thread at a time; a concurrent call gets ONAIR_BUSY and
/// changes nothing. Its `onair_invocation` is valid until the next call on
/// it by any thread not refused with ONAIR_BUSY. Free it only when no other
/// thread may call it.
#[derive(Debug)]
pub struct onair_commands(Guarded<CommandsState>);

impl Lends for CommandsState {}

/// The state behind an `onair_commands`.
#[derive(Debug)]
pub(crate) struct CommandsState {
    commands: Commands,
    matched: Option<Result<Invocation, Denied>>,
    args: Vec<onair_str>,
}

/// Who may run a command (`onair_commands_add`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_allowed {
    /// Anyone in the chat.
    ONAIR_ALLOWED_ANYONE = 0,
    /// Managers and the DJ.
    ONAIR_ALLOWED_MANAGERS = 1,
    /// The DJ only.
    ONAIR_ALLOWED_DJ = 2,
}

/// What the poster of a command is.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_role {
    /// A listener.
    ONAIR_ROLE_LISTENER = 0,
    /// A manager.
    ONAIR_ROLE_MANAGER = 1,
    /// The DJ.
    ONAIR_ROLE_DJ = 2,
}

/// What a chat asked for (`onair_commands_match`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_command_match {
    /// Not a command (or from an ignored poster).
    ONAIR_COMMAND_NONE = 0,
    /// A command to run.
    ONAIR_COMMAND_RUN = 1,
    /// A command the poster may not run (`needed` says who may).
    ONAIR_COMMAND_DENIED = 2,
}

/// A matched command, borrowed from the commands handle until the next call on it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct onair_invocation {
    /// Run, denied, or nothing.
    pub kind: onair_command_match,
    /// The command's name as registered.
    pub name: onair_str,
    /// The text after the name, trimmed (RUN).
    pub rest: onair_str,
    /// The arguments, split on white space (RUN): `args_len` strings.
    pub args: *const onair_str,
    /// How many arguments.
    pub args_len: usize,
    /// The poster's id.
    pub user_id: onair_str,
    /// The poster's nickname, or NULL.
    pub nickname: onair_str,
    /// What the poster is.
    pub role: onair_role,
    /// DENIED: who may run it.
    pub needed: onair_allowed,
}

fn role_of(role: Role) -> onair_role {
    match role {
        Role::Listener => onair_role::ONAIR_ROLE_LISTENER,
        Role::Manager => onair_role::ONAIR_ROLE_MANAGER,
        Role::Dj => onair_role::ONAIR_ROLE_DJ,
    }
}

fn allowed_of(allowed: Allowed) -> onair_allowed {
    match allowed {
        Allowed::Anyone => onair_allowed::ONAIR_ALLOWED_ANYONE,
        Allowed::Managers => onair_allowed::ONAIR_ALLOWED_MANAGERS,
        Allowed::Dj => onair_allowed::ONAIR_ALLOWED_DJ,
    }
}

/// An empty command registry with the prefix "!". Free with
/// `onair_commands_free`.
///
/// Errors: NULL `out_commands` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_commands_new(
    out_commands: *mut *mut onair_commands,
) -> onair_result {
    boundary(|| {
        let slot = out(out_commands)?;
        *slot = new_handle::<onair_commands>(CommandsState {
            commands: Commands::new(),
            matched: None,
            args: Vec::new(),
        });
        Ok(())
    })
}

/// Frees a command registry. NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn onair_commands_free(commands: *mut onair_commands) {
    // SAFETY: NULL or a handle from this library, freed once.
    boundary_or((), || unsafe { free(commands) })
}

fn rebuild(
    commands: *mut onair_commands,
    f: impl FnOnce(Commands) -> Commands,
) -> Result<(), onair_result> {
    // SAFETY: checked pointer from this library.
    let mut held = unsafe { hold(commands) }?;
    let c = &mut *held;
    c.commands = f(std::mem::take(&mut c.commands));
    Ok(())
}

/// Replaces the prefixes with `prefix` (e.g. "?").
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 → ONAIR_INVALID_UTF8.
#[no_mangle]
pub unsafe extern "C" fn onair_commands_set_prefix(
    commands: *mut onair_commands,
    prefix: *const c_char,
    len: usize,
) -> onair_result {
    boundary(|| {
        let p = text_arg(prefix, len)?;
        rebuild(commands, |c| c.prefix(p))
    })
}

/// Adds a prefix beside the ones set.
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 → ONAIR_INVALID_UTF8.
#[no_mangle]
pub unsafe extern "C" fn onair_commands_add_prefix(
    commands: *mut onair_commands,
    prefix: *const c_char,
    len: usize,
) -> onair_result {
    boundary(|| {
        let p = text_arg(prefix, len)?;
        rebuild(commands, |c| c.also_prefix(p))
    })
}

/// Registers command `name` (matched without case), runnable by `allowed`
/// (an `onair_allowed` value).
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 →
/// ONAIR_INVALID_UTF8; `allowed` out of range → ONAIR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn onair_commands_add(
    commands: *mut onair_commands,
    name: *const c_char,
    len: usize,
    allowed: u32,
) -> onair_result {
    boundary(|| {
        let n = text_arg(name, len)?;
        let allowed = match allowed {
            0 => Allowed::Anyone,
            1 => Allowed::Managers,
            2 => Allowed::Dj,
            _ => return Err(ONAIR_INVALID_ARGUMENT),
        };
        rebuild(commands, |c| c.command(n, allowed))
    })
}

/// Ignores chat from `user_id` (the bot's own id, another bot's).
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 → ONAIR_INVALID_UTF8.
#[no_mangle]
pub unsafe extern "C" fn onair_commands_ignore(
    commands: *mut onair_commands,
    user_id: *const c_char,
    len: usize,
) -> onair_result {
    boundary(|| {
        let id = text_arg(user_id, len)?;
        rebuild(commands, |c| c.ignore_bots([id]))
    })
}

/// Matches a chat event against the commands (other events match
/// nothing). `audience` (may be NULL) tells managers apart. The result is
/// borrowed from `commands` until the next call on it.
///
/// Errors: NULL `commands`, `event` or `out_invocation` →
/// ONAIR_NULL_PARAMETER; a view without an event → ONAIR_NO_EVENT;
/// `commands`, `audience` or the bot or decoder the event came from in a
/// call on another thread → ONAIR_BUSY (nothing changes).
#[no_mangle]
pub unsafe extern "C" fn onair_commands_match(
    commands: *mut onair_commands,
    audience: *const onair_audience,
    event: *const onair_event,
    out_invocation: *mut onair_invocation,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        let mut held = unsafe { hold(commands) }?;
        let c = &mut *held;
        let slot = out(out_invocation)?;
        // SAFETY: a view from this library.
        let ev = unsafe { event_in(event) }?;
        let empty = Audience::new();
        let audience_held = if audience.is_null() {
            None
        } else {
            // SAFETY: a pointer from this library, held for this call too.
            Some(unsafe { hold(audience) }?)
        };
        let audience = audience_held.as_deref().map_or(&empty, |a| &a.audience);
        c.matched = match &*ev {
            Event::Chat(chat) => c.commands.match_chat(chat, audience),
            _ => None,
        };
        c.args.clear();
        let mut v = onair_invocation {
            kind: onair_command_match::ONAIR_COMMAND_NONE,
            name: onair_str::NULL,
            rest: onair_str::NULL,
            args: std::ptr::null(),
            args_len: 0,
            user_id: onair_str::NULL,
            nickname: onair_str::NULL,
            role: onair_role::ONAIR_ROLE_LISTENER,
            needed: onair_allowed::ONAIR_ALLOWED_ANYONE,
        };
        match &c.matched {
            None => {}
            Some(Ok(run)) => {
                c.args.extend(run.args.iter().map(|a| onair_str::of(a)));
                v.kind = onair_command_match::ONAIR_COMMAND_RUN;
                v.name = onair_str::of(&run.name);
                v.rest = onair_str::of(&run.rest);
                v.args = c.args.as_ptr();
                v.args_len = c.args.len();
                v.user_id = onair_str::of(&run.user.id);
                v.nickname = onair_str::opt(run.user.nickname.as_deref());
                v.role = role_of(run.role);
            }
            Some(Err(denied)) => {
                v.kind = onair_command_match::ONAIR_COMMAND_DENIED;
                v.name = onair_str::of(&denied.name);
                v.user_id = onair_str::of(&denied.user.id);
                v.nickname = onair_str::opt(denied.user.nickname.as_deref());
                v.role = role_of(denied.role);
                v.needed = allowed_of(denied.needed);
            }
        }
        *slot = v;
        Ok(())
    })
}

// ---- milestones ------------------------------------------------------------------

/// Heart and donation milestones with running donor totals
/// (`onair_milestones_new`).
///
/// Threads: one thread at a time; a concurrent call gets ONAIR_BUSY
/// (`_donated_by`, `_hearts`, `_total_donated`: 0) and changes nothing. Its
/// `onair_milestone` is valid until the next call on it by any thread not
/// refused with ONAIR_BUSY. Free it only when no other thread may call it.
#[derive(Debug)]
pub struct onair_milestones(Guarded<MilestonesState>);

impl Lends for MilestonesState {}

/// The state behind an `onair_milestones`.
#[derive(Debug)]
pub(crate) struct MilestonesState {
    milestones: Milestones,
    last: Option<Milestone>,
}

/// A milestone reached (`onair_milestones_on_event`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_milestone_kind {
    /// None reached.
    ONAIR_MILESTONE_NONE = 0,
    /// The broadcast's hearts crossed `reached`.
    ONAIR_MILESTONE_HEARTS = 1,
    /// A donor's total crossed `reached`.
    ONAIR_MILESTONE_DONATED = 2,
}

/// A milestone, borrowed from the handle until the next call on it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct onair_milestone {
    /// Which, if any.
    pub kind: onair_milestone_kind,
    /// The multiple of the step crossed.
    pub reached: u64,
    /// The total now (the broadcast's hearts, or the donor's total).
    pub total: u64,
    /// DONATED: the donor's id.
    pub user_id: onair_str,
    /// DONATED: the donor's nickname, or NULL.
    pub nickname: onair_str,
}

fn milestones_box(milestones: Milestones) -> *mut onair_milestones {
    new_handle(MilestonesState {
        milestones,
        last: None,
    })
}

/// Milestones every `hearts_every` hearts and every `donations_every`
/// units a person donates (0: none of that kind). Free with
/// `onair_milestones_free`.
///
/// Errors: NULL `out_milestones` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_milestones_new(
    hearts_every: u64,
    donations_every: u64,
    out_milestones: *mut *mut onair_milestones,
) -> onair_result {
    boundary(|| {
        let slot = out(out_milestones)?;
        let mut m = Milestones::new();
        if hearts_every > 0 {
            m = m.hearts_every(hearts_every);
        }
        if donations_every > 0 {
            m = m.donations_every(donations_every);
        }
        *slot = milestones_box(m);
        Ok(())
    })
}

/// Milestones from `onair_milestones_to_json`'s text (bytes; no NUL needed).
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not stored milestones →
/// ONAIR_INVALID_STATE.
#[no_mangle]
pub unsafe extern "C" fn onair_milestones_from_json(
    json: *const c_char,
    len: usize,
    out_milestones: *mut *mut onair_milestones,
) -> onair_result {
    boundary(|| {
        let slot = out(out_milestones)?;
        if json.is_null() {
            return Err(ONAIR_NULL_PARAMETER);
        }
        // SAFETY: (pointer, length) from the caller.
        let bytes = unsafe { bytes_in(json.cast(), len) }?;
        *slot = milestones_box(Milestones::from_json(bytes).map_err(|_| ONAIR_INVALID_STATE)?);
        Ok(())
    })
}

/// The stored form, into a string the caller owns (free with
/// `onair_string_free`); `out_len` may be NULL.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_milestones_to_json(
    milestones: *const onair_milestones,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        let m = unsafe { hold(milestones) }?;
        let slot = out(out_json)?;
        string_out(m.milestones.to_json(), slot, out(out_len).ok());
        Ok(())
    })
}

/// Frees milestones. NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn onair_milestones_free(milestones: *mut onair_milestones) {
    // SAFETY: NULL or a handle from this library, freed once.
    boundary_or((), || unsafe { free(milestones) })
}

/// Ties the totals to broadcast `live_id` (a new id starts from zero and
/// sets `*out_new`, which may be NULL).
///
/// Errors: NULL `milestones` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_milestones_start_broadcast(
    milestones: *mut onair_milestones,
    live_id: u64,
    out_new: *mut bool,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        let mut held = unsafe { hold(milestones) }?;
        let m = &mut *held;
        let new = m.milestones.start_broadcast(live_id);
        if let Ok(slot) = out(out_new) {
            *slot = new;
        }
        Ok(())
    })
}

/// Starts the totals over (after the broadcast's `end` with `LIVE_ENDED`).
///
/// Errors: NULL `milestones` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_milestones_end_broadcast(
    milestones: *mut onair_milestones,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        unsafe { hold(milestones) }?.milestones.end_broadcast();
        Ok(())
    })
}

/// Records an event (hearts, donations; others are ignored) and says which
/// milestone, if any, it crossed.
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; a view without an event →
/// ONAIR_NO_EVENT; this handle, or the bot or decoder the event came from,
/// in a call on another thread → ONAIR_BUSY (nothing recorded).
#[no_mangle]
pub unsafe extern "C" fn onair_milestones_on_event(
    milestones: *mut onair_milestones,
    event: *const onair_event,
    out_milestone: *mut onair_milestone,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        let mut held = unsafe { hold(milestones) }?;
        let m = &mut *held;
        let slot = out(out_milestone)?;
        // SAFETY: a view from this library.
        let ev = unsafe { event_in(event) }?;
        m.last = m.milestones.on_event(&ev);
        *slot = match &m.last {
            Some(Milestone::Hearts { reached, total }) => onair_milestone {
                kind: onair_milestone_kind::ONAIR_MILESTONE_HEARTS,
                reached: *reached,
                total: *total,
                user_id: onair_str::NULL,
                nickname: onair_str::NULL,
            },
            Some(Milestone::Donated {
                user,
                reached,
                total,
            }) => onair_milestone {
                kind: onair_milestone_kind::ONAIR_MILESTONE_DONATED,
                reached: *reached,
                total: *total,
                user_id: onair_str::of(&user.id),
                nickname: onair_str::opt(user.nickname.as_deref()),
            },
            _ => onair_milestone {
                kind: onair_milestone_kind::ONAIR_MILESTONE_NONE,
                reached: 0,
                total: 0,
                user_id: onair_str::NULL,
                nickname: onair_str::NULL,
            },
        };
        Ok(())
    })
}

/// What `user_id` has donated in this broadcast (running total); NULL or
/// invalid arguments → 0.
#[no_mangle]
pub unsafe extern "C" fn onair_milestones_donated_by(
    milestones: *const onair_milestones,
    user_id: *const c_char,
    user_id_len: usize,
) -> u64 {
    boundary_or(0, || {
        // SAFETY: checked pointer from this library.
        let (Ok(m), Ok(id)) = (unsafe { hold(milestones) }, text_arg(user_id, user_id_len)) else {
            return 0;
        };
        m.milestones.donated_by(id)
    })
}

/// The broadcast's hearts so far; NULL, or a call on it in flight on
/// another thread → 0.
#[no_mangle]
pub unsafe extern "C" fn onair_milestones_hearts(milestones: *const onair_milestones) -> u64 {
    // SAFETY: checked pointer from this library.
    boundary_or(0, || {
        unsafe { hold(milestones) }.map_or(0, |m| m.milestones.hearts())
    })
}

/// The broadcast's donations so far; NULL, or a call on it in flight on
/// another thread → 0.
#[no_mangle]
pub unsafe extern "C" fn onair_milestones_total_donated(
    milestones: *const onair_milestones,
) -> u64 {
    // SAFETY: checked pointer from this library.
    boundary_or(0, || {
        unsafe { hold(milestones) }.map_or(0, |m| m.milestones.total_donated())
    })
}

// ---- timers ----------------------------------------------------------------------

/// App timers as data for the bot's loop (`onair_timers_new`): fold
/// `onair_timers_next_deadline` into your sleep, then pop what is due.
///
/// Threads: one thread at a time; a concurrent call gets ONAIR_BUSY and
/// changes nothing. The tag of `_pop_due` is valid until the next call on
/// it by any thread not refused with ONAIR_BUSY. Free it only when no other
/// thread may call it.
#[derive(Debug)]
pub struct onair_timers(Guarded<TimersState>);

impl Lends for TimersState {}

/// The state behind an `onair_timers`.
#[derive(Debug)]
pub(crate) struct TimersState {
    timers: Timers,
    popped: Option<Tag>,
}

/// A timer refusal as its result code (`onair_result`: "a step of 0" is
/// `ONAIR_INVALID_ARGUMENT`). Shared with the bot's timers.
pub(crate) fn timer_error(e: TimerError) -> onair_result {
    match e {
        TimerError::TooMany => ONAIR_TOO_MANY_TIMERS,
        TimerError::ZeroPeriod => ONAIR_INVALID_ARGUMENT,
        _ => ONAIR_BAD_TAG,
    }
}

/// No timers. Free with `onair_timers_free`.
///
/// Errors: NULL `out_timers` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_timers_new(out_timers: *mut *mut onair_timers) -> onair_result {
    boundary(|| {
        let slot = out(out_timers)?;
        *slot = new_handle::<onair_timers>(TimersState {
            timers: Timers::new(),
            popped: None,
        });
        Ok(())
    })
}

/// Frees timers. NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn onair_timers_free(timers: *mut onair_timers) {
    // SAFETY: NULL or a handle from this library, freed once.
    boundary_or((), || unsafe { free(timers) })
}

/// Sets timer `tag` to fire once at `at_ms` (replacing one with that tag).
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 →
/// ONAIR_INVALID_UTF8; ONAIR_BAD_TAG; ONAIR_TOO_MANY_TIMERS.
#[no_mangle]
pub unsafe extern "C" fn onair_timers_schedule(
    timers: *mut onair_timers,
    at_ms: u64,
    tag: *const c_char,
    tag_len: usize,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        let mut held = unsafe { hold(timers) }?;
        let t = &mut *held;
        let tag = text_arg(tag, tag_len)?;
        t.timers.schedule(at_ms, tag).map_err(timer_error)
    })
}

/// Sets timer `tag` to fire every `period_ms`, first at `first_at_ms`.
///
/// Errors: as `onair_timers_schedule`; a `period_ms` of 0 →
/// ONAIR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn onair_timers_every(
    timers: *mut onair_timers,
    period_ms: u64,
    tag: *const c_char,
    tag_len: usize,
    first_at_ms: u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        let mut held = unsafe { hold(timers) }?;
        let t = &mut *held;
        let tag = text_arg(tag, tag_len)?;
        t.timers
            .every(period_ms, tag, first_at_ms)
            .map_err(timer_error)
    })
}

/// Cancels timer `tag`; `*out_found` (may be NULL) says whether it was set.
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 → ONAIR_INVALID_UTF8.
#[no_mangle]
pub unsafe extern "C" fn onair_timers_cancel(
    timers: *mut onair_timers,
    tag: *const c_char,
    tag_len: usize,
    out_found: *mut bool,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        let mut held = unsafe { hold(timers) }?;
        let t = &mut *held;
        let tag = text_arg(tag, tag_len)?;
        let found = t.timers.cancel(tag);
        if let Ok(slot) = out(out_found) {
            *slot = found;
        }
        Ok(())
    })
}

/// The earliest deadline (`connected`: whether the stream is open, for
/// timers that run only while connected): `*out_has` false when none.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_timers_next_deadline(
    timers: *const onair_timers,
    connected: bool,
    out_has: *mut bool,
    out_at_ms: *mut u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        let t = unsafe { hold(timers) }?;
        let (has, at) = (out(out_has)?, out(out_at_ms)?);
        let next = t.timers.next_deadline(connected);
        *has = next.is_some();
        *at = next.unwrap_or(0);
        Ok(())
    })
}

/// Takes one timer due at `now_ms`: its tag goes to `*out_tag` (borrowed
/// until the next call on the timers), or a NULL `ptr` when none is due.
/// Call until NULL.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_timers_pop_due(
    timers: *mut onair_timers,
    now_ms: u64,
    connected: bool,
    out_tag: *mut onair_str,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        let mut held = unsafe { hold(timers) }?;
        let t = &mut *held;
        let slot = out(out_tag)?;
        t.popped = t.timers.pop_due(now_ms, connected);
        *slot = onair_str::opt(t.popped.as_ref().map(Tag::as_str));
        Ok(())
    })
}

// ---- tally -----------------------------------------------------------------------

/// One broadcast's totals by person (`onair_tally_new`), the form the
/// emulator's ledger is compared with.
///
/// Threads: one thread at a time; a concurrent call gets ONAIR_BUSY
/// (`_hearts`, `_donated`, `_attendance`: 0) and changes nothing. Free it
/// only when no other thread may call it.
#[derive(Debug)]
pub struct onair_tally(Guarded<Tally>);

impl Lends for Tally {}

/// An empty tally. Free with `onair_tally_free`.
///
/// Errors: NULL `out_tally` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_tally_new(out_tally: *mut *mut onair_tally) -> onair_result {
    boundary(|| {
        let slot = out(out_tally)?;
        *slot = new_handle::<onair_tally>(Tally::new());
        Ok(())
    })
}

/// Frees a tally. NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn onair_tally_free(tally: *mut onair_tally) {
    // SAFETY: NULL or a handle from this library, freed once.
    boundary_or((), || unsafe { free(tally) })
}

/// Records an event (chat, joins, hearts, donations; the DJ is kept out).
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; a view without an event →
/// ONAIR_NO_EVENT; this handle, or the bot or decoder the event came from,
/// in a call on another thread → ONAIR_BUSY (nothing recorded).
#[no_mangle]
pub unsafe extern "C" fn onair_tally_record(
    tally: *mut onair_tally,
    event: *const onair_event,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        let mut held = unsafe { hold(tally) }?;
        let t = &mut *held;
        // SAFETY: a view from this library.
        let ev = unsafe { event_in(event) }?;
        t.record(&ev);
        Ok(())
    })
}

/// The totals as the core's tally JSON (`{"hearts","donated","attendance",
/// "people":{…}}`), into a string the caller owns (free with
/// `onair_string_free`); `out_len` may be NULL.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_tally_json(
    tally: *const onair_tally,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from this library.
        let t = unsafe { hold(tally) }?;
        let slot = out(out_json)?;
        string_out(
            onair_core::proto::json::TallyJson(&t).to_line(),
            slot,
            out(out_len).ok(),
        );
        Ok(())
    })
}

/// Hearts in the tally; NULL, or a call on it in flight on another
/// thread → 0.
#[no_mangle]
pub unsafe extern "C" fn onair_tally_hearts(tally: *const onair_tally) -> u64 {
    // SAFETY: checked pointer from this library.
    boundary_or(0, || unsafe { hold(tally) }.map_or(0, |t| t.total_hearts()))
}

/// Currency donated in the tally; NULL, or a call on it in flight on
/// another thread → 0.
#[no_mangle]
pub unsafe extern "C" fn onair_tally_donated(tally: *const onair_tally) -> u64 {
    // SAFETY: checked pointer from this library.
    boundary_or(0, || {
        unsafe { hold(tally) }.map_or(0, |t| t.total_donated())
    })
}

/// People who joined (the ledger's attendance); NULL, or a call on it in
/// flight on another thread → 0.
#[no_mangle]
pub unsafe extern "C" fn onair_tally_attendance(tally: *const onair_tally) -> usize {
    // SAFETY: checked pointer from this library.
    boundary_or(0, || unsafe { hold(tally) }.map_or(0, |t| t.attendance()))
}
