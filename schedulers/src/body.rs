//! A task's body: what its slot holds. Before the run, the closure; after
//! a one-shot's run, the value its [`ScheduledFuture`](crate::ScheduledFuture)
//! waits for, or why it failed; nothing once that is gone.
//!
//! # Layout
//!
//! A body is 24 bytes: a pointer to a static table of what to do with it,
//! and 16 bytes of storage. A value of at most [`INLINE_BYTES`] bytes whose
//! alignment is at most 8 (a closure that captures an id and an `Arc`, a
//! `u64` result) lives in the storage itself, so scheduling it allocates
//! nothing; a larger one is boxed and the storage holds the box. The
//! closure is type-erased the way `Box<dyn FnOnce()>` is, minus the
//! allocation (as the `smallbox` crate does, with a table of our own that
//! also covers the value left behind and the failure).
//!
//! # Who may touch a body
//!
//! Only the holder the task's state word names (see [`crate::state`]): the
//! thread that took the free slot, until it publishes the task; the thread
//! whose claim or cancel won, after that. This module trusts its caller on
//! that; what it guarantees is that a body is never dropped twice, never
//! read after it was taken, and left empty (never half-dropped) when a
//! closure or a destructor panics.

#![allow(unsafe_code)]

use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;
use std::mem::{align_of, size_of, MaybeUninit};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use crate::error::Error;
use crate::task::{Repeat, TaskContext};

/// The most bytes a task's closure may capture (at an alignment of at most
/// 8) and still be stored in the scheduler's slot with no allocation; a
/// larger closure is boxed. The same holds for the value a one-shot task
/// returns to its [`ScheduledFuture`](crate::ScheduledFuture).
pub const INLINE_BYTES: usize = 16;

/// The storage: two words, so anything aligned to at most 8 fits in place.
type Words = MaybeUninit<[usize; 2]>;

/// Whether a `T` is kept in place (else it is boxed).
const fn fits<T>() -> bool {
    size_of::<T>() <= INLINE_BYTES && align_of::<T>() <= align_of::<[usize; 2]>()
}

/// Moves `value` into `words`, boxing it if it does not fit.
///
/// # Safety
///
/// `words` holds nothing that still needs dropping.
unsafe fn put<T>(words: &mut Words, value: T) {
    if fits::<T>() {
        // SAFETY: a `T` fits the storage in size and alignment (`fits`), and
        // the caller says nothing there needs dropping.
        unsafe { ptr::write(words.as_mut_ptr().cast::<T>(), value) }
    } else {
        // SAFETY: a `Box` is one pointer, which fits; as above.
        unsafe { ptr::write(words.as_mut_ptr().cast::<Box<T>>(), Box::new(value)) }
    }
}

/// Moves the `T` out of `words`, which then hold nothing.
///
/// # Safety
///
/// `words` hold a `T` put there by [`put`], not taken since.
unsafe fn take<T>(words: &mut Words) -> T {
    if fits::<T>() {
        // SAFETY: the caller says a `T` is there; reading it out moves it.
        unsafe { ptr::read(words.as_ptr().cast::<T>()) }
    } else {
        // SAFETY: as above, for the box `put` made.
        unsafe { *ptr::read(words.as_ptr().cast::<Box<T>>()) }
    }
}

/// The `T` in `words`, in place.
///
/// # Safety
///
/// As [`take`]; the reference must not outlive the value.
unsafe fn get_mut<T>(words: &mut Words) -> &mut T {
    if fits::<T>() {
        // SAFETY: the caller says a `T` is there, and `words` is borrowed
        // mutably for as long as the result.
        unsafe { &mut *words.as_mut_ptr().cast::<T>() }
    } else {
        // SAFETY: as above, through the box.
        unsafe { &mut *words.as_mut_ptr().cast::<Box<T>>() }
    }
}

/// The `T` in `words`, shared.
///
/// # Safety
///
/// As [`get_mut`].
unsafe fn get<T>(words: &Words) -> &T {
    if fits::<T>() {
        // SAFETY: as `get_mut`, shared.
        unsafe { &*words.as_ptr().cast::<T>() }
    } else {
        // SAFETY: as above, through the box.
        unsafe { &*words.as_ptr().cast::<Box<T>>() }
    }
}

/// What a body holds, and so what its table can do.
#[derive(Clone, Copy)]
enum Holds {
    Nothing,
    Closure,
    /// The value of a one-shot, of the type the function names.
    Output(fn() -> TypeId),
    Failure,
}

/// The operations of one kind of content. A table is a constant, so each
/// reference to one is `'static` (promoted).
struct Table {
    holds: Holds,
    /// How the task repeats: `Once` but for a periodic closure.
    ///
    /// # Safety
    ///
    /// The body holds this table's kind of content.
    repeat: unsafe fn(&Body) -> Repeat,
    /// Runs the closure (closures only).
    ///
    /// # Safety
    ///
    /// The body holds this table's kind of content.
    run: unsafe fn(&mut Body, &TaskContext) -> Ran,
    /// Moves the content out and drops it; the body is empty first, so a
    /// panicking destructor leaves it empty.
    ///
    /// # Safety
    ///
    /// As `run`.
    clear: unsafe fn(&mut Body),
}

/// How a run ended.
pub(crate) enum Ran {
    /// A one-shot ran (its value, if kept, is in the body); or a periodic
    /// task's closure stopped its own runs.
    Done,
    /// A periodic task ran and runs again: its closure stays in the body.
    Again,
    /// The closure panicked, or a value it returned did when dropped. A
    /// periodic closure is still in the body.
    Panicked(Error),
}

/// A task's body. See the [module docs](self).
///
/// All-zero bits are an empty body (no table), so a slab of them can come
/// from zeroed memory that costs nothing until it is touched.
pub(crate) struct Body {
    table: Option<&'static Table>,
    words: Words,
}

// SAFETY: every constructor takes only `Send` content (closures, values and
// errors), and a body gives out no shared access to it across threads
// except `failure`, which is an `Error` (`Sync`).
unsafe impl Send for Body {}

/// Refuses to run what is not a closure; only called by mistake.
unsafe fn run_nothing(_: &mut Body, _: &TaskContext) -> Ran {
    Ran::Done
}

unsafe fn clear_nothing(_: &mut Body) {}

unsafe fn repeat_once(_: &Body) -> Repeat {
    Repeat::Once
}

const EMPTY: Table = Table {
    holds: Holds::Nothing,
    repeat: repeat_once,
    run: run_nothing,
    clear: clear_nothing,
};

/// The tables of a one-shot closure `F` whose value `T` is dropped when it
/// returns (`Task::once`).
struct OnceTables<F, T>(PhantomData<(F, T)>);

impl<F, T> OnceTables<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: 'static,
{
    const TABLE: Table = Table {
        holds: Holds::Closure,
        repeat: repeat_once,
        run: Self::run,
        clear: clear_as::<F>,
    };

    /// # Safety
    ///
    /// The body holds an `F`.
    unsafe fn run(body: &mut Body, _: &TaskContext) -> Ran {
        // SAFETY: the caller says an `F` is there; the body is marked empty
        // before the call, so a panic cannot leave it holding a moved value.
        let f = unsafe { take::<F>(&mut body.words) };
        body.table = None;
        // The value is dropped inside: a panicking destructor fails the task.
        match catch_unwind(AssertUnwindSafe(move || drop(f()))) {
            Ok(()) => Ran::Done,
            Err(payload) => Ran::Panicked(Error::from_panic(payload.as_ref())),
        }
    }
}

/// The tables of a one-shot closure `F` whose value `T` stays in the body
/// for its future (`SchedulerExt::schedule`).
struct OutputTables<F, T>(PhantomData<(F, T)>);

impl<F, T> OutputTables<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    const TABLE: Table = Table {
        holds: Holds::Closure,
        repeat: repeat_once,
        run: Self::run,
        clear: clear_as::<F>,
    };

    /// # Safety
    ///
    /// The body holds an `F`.
    unsafe fn run(body: &mut Body, _: &TaskContext) -> Ran {
        // SAFETY: as `OnceTables::run`.
        let f = unsafe { take::<F>(&mut body.words) };
        body.table = None;
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(value) => {
                // SAFETY: the body is empty (the closure was taken).
                unsafe { put::<T>(&mut body.words, value) };
                body.table = Some(&OutputTable::<T>::TABLE);
                Ran::Done
            }
            Err(payload) => Ran::Panicked(Error::from_panic(payload.as_ref())),
        }
    }
}

/// Drops the `V` a body holds, leaving it empty first.
///
/// # Safety
///
/// The body holds a `V`.
unsafe fn clear_as<V>(body: &mut Body) {
    body.table = None;
    // SAFETY: the caller says a `V` is there; the body is already marked
    // empty, so it is taken exactly once, and a panicking destructor
    // leaves it empty.
    drop(unsafe { take::<V>(&mut body.words) });
}

/// The tables of a periodic closure: the closure and how it repeats.
struct PeriodicTables<F>(PhantomData<F>);

/// A periodic closure as stored: called in place for every run.
struct Periodic<F> {
    repeat: Repeat,
    f: F,
}

impl<F> PeriodicTables<F>
where
    F: FnMut(&TaskContext) + Send + 'static,
{
    const TABLE: Table = Table {
        holds: Holds::Closure,
        repeat: Self::repeat,
        run: Self::run,
        clear: clear_as::<Periodic<F>>,
    };

    /// # Safety
    ///
    /// The body holds a `Periodic<F>`.
    unsafe fn run(body: &mut Body, context: &TaskContext) -> Ran {
        // SAFETY: the caller says a `Periodic<F>` is there. A panic leaves it
        // in place, a valid value, for the caller to clear.
        let periodic = unsafe { get_mut::<Periodic<F>>(&mut body.words) };
        match catch_unwind(AssertUnwindSafe(|| (periodic.f)(context))) {
            Ok(()) if context.is_stopped() => Ran::Done,
            Ok(()) => Ran::Again,
            Err(payload) => Ran::Panicked(Error::from_panic(payload.as_ref())),
        }
    }

    /// # Safety
    ///
    /// The body holds a `Periodic<F>`.
    unsafe fn repeat(body: &Body) -> Repeat {
        // SAFETY: the caller says a `Periodic<F>` is there.
        unsafe { get::<Periodic<F>>(&body.words) }.repeat
    }
}

/// The tables of a value a one-shot left for its future.
struct OutputTable<T>(PhantomData<T>);

impl<T: Send + 'static> OutputTable<T> {
    const TABLE: Table = Table {
        holds: Holds::Output(TypeId::of::<T>),
        repeat: repeat_once,
        run: run_nothing,
        clear: clear_as::<T>,
    };
}

const FAILURE: Table = Table {
    holds: Holds::Failure,
    repeat: repeat_once,
    run: run_nothing,
    clear: clear_as::<Error>,
};

impl Body {
    /// An empty body.
    pub(crate) const fn empty() -> Body {
        Body {
            table: None,
            words: MaybeUninit::uninit(),
        }
    }

    /// A one-shot closure whose value is dropped when it returns.
    pub(crate) fn once<F, T>(f: F) -> Body
    where
        F: FnOnce() -> T + Send + 'static,
        T: 'static,
    {
        Body::holding(f, &OnceTables::<F, T>::TABLE)
    }

    /// A one-shot closure whose value stays in the body for its future.
    pub(crate) fn with_output<F, T>(f: F) -> Body
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        Body::holding(f, &OutputTables::<F, T>::TABLE)
    }

    /// A periodic closure, called once per run.
    pub(crate) fn periodic<F>(repeat: Repeat, f: F) -> Body
    where
        F: FnMut(&TaskContext) + Send + 'static,
    {
        Body::holding(Periodic { repeat, f }, &PeriodicTables::<F>::TABLE)
    }

    /// Why a task failed, kept for its handles.
    pub(crate) fn failure(error: Error) -> Body {
        Body::holding(error, &FAILURE)
    }

    fn table(&self) -> &'static Table {
        self.table.unwrap_or(&EMPTY)
    }

    fn holding<V>(value: V, table: &'static Table) -> Body {
        let mut body = Body::empty();
        // SAFETY: a new body holds nothing; `table` is the one for `V` (each
        // constructor pairs them).
        unsafe { put::<V>(&mut body.words, value) };
        body.table = Some(table);
        body
    }

    /// True when the body holds nothing.
    #[cfg(any(test, debug_assertions))]
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self.table().holds, Holds::Nothing)
    }

    /// How the closure repeats (`Once` for anything but a periodic closure).
    pub(crate) fn repeat(&self) -> Repeat {
        // SAFETY: each table's `repeat` is called on a body holding its
        // content.
        unsafe { (self.table().repeat)(self) }
    }

    /// Runs the closure once, on this thread, catching a panic. A one-shot
    /// closure is consumed (its kept value, if any, takes its place); a
    /// periodic one stays for its next run unless it stopped itself.
    pub(crate) fn run(&mut self, context: &TaskContext) -> Ran {
        // SAFETY: each table's `run` is called on a body holding its content.
        unsafe { (self.table().run)(self, context) }
    }

    /// Drops what the body holds, leaving it empty; a panicking destructor
    /// leaves it empty too.
    pub(crate) fn clear(&mut self) {
        // SAFETY: each table's `clear` is called on a body holding its
        // content.
        unsafe { (self.table().clear)(self) }
    }

    /// Takes the value a one-shot left, if it is a `T`.
    pub(crate) fn take_output<T: Send + 'static>(&mut self) -> Option<T> {
        match self.table().holds {
            Holds::Output(type_id) if type_id() == TypeId::of::<T>() => {
                self.table = None;
                // SAFETY: the table says a `T` is there; the body is marked
                // empty, so it is taken once.
                Some(unsafe { take::<T>(&mut self.words) })
            }
            _ => None,
        }
    }

    /// The failure the body holds, if that is what it holds.
    pub(crate) fn failure_ref(&self) -> Option<&Error> {
        match self.table().holds {
            // SAFETY: the table says an `Error` is there, and `self` is
            // borrowed for as long as the reference.
            Holds::Failure => Some(unsafe { get::<Error>(&self.words) }),
            _ => None,
        }
    }
}

impl Drop for Body {
    /// Drops the content; a panicking destructor is contained (a body is
    /// dropped with its slab, maybe while a panic unwinds already).
    fn drop(&mut self) {
        let _ = catch_unwind(AssertUnwindSafe(|| self.clear()));
    }
}

impl Default for Body {
    fn default() -> Body {
        Body::empty()
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let holds = match self.table().holds {
            Holds::Nothing => "nothing",
            Holds::Closure => "a closure",
            Holds::Output(_) => "a value",
            Holds::Failure => "a failure",
        };
        f.debug_struct("Body")
            .field("holds", &holds)
            .field("repeat", &self.repeat())
            .finish()
    }
}
