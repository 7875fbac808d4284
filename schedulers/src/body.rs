//! A task's body: what its slot holds. Before the run, the closure; after
//! a one-shot's run, the value its [`ScheduledFuture`](crate::ScheduledFuture)
//! waits for, or why it failed; nothing once that is gone.
//!
//! # Layout
//!
//! A body is 20 bytes: a 4-byte reference to a static table of what to do
//! with it, and 16 bytes of storage. A value of at most [`INLINE_BYTES`]
//! bytes whose alignment is at most 8 (a closure that captures an id and an
//! `Arc`, a `u64` result) lives in the storage itself, so scheduling it
//! allocates nothing; a larger one is boxed and the storage holds the box.
//! The closure is type-erased the way `Box<dyn FnOnce()>` is, minus the
//! allocation (as the `smallbox` crate does, with a table of our own that
//! also covers the value left behind and the failure).
//!
//! Twenty bytes, not the 24 of a pointer and two words, is a twelfth of a
//! wheel's whole cost per pending timer. Two things buy the four bytes:
//!
//! - The storage is aligned to 4 only: a value in place is moved in and out
//!   with unaligned copies and never borrowed there. What is borrowed in
//!   place (a periodic closure, a name's wrapper, a failure) is boxed.
//! - The table reference is its offset from a static of this module
//!   ([`TableRef`]): a binary's constants lie within 2 GiB of each other
//!   (x86-64's small and medium code models, and every other 64-bit
//!   target's default, place code and read-only data so). A table farther
//!   away (in another shared object) is listed once in a registry and
//!   referred to by its index there instead.
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
use std::sync::{Arc, PoisonError, RwLock};

use crate::error::Error;
use crate::rule::{Repeat, Rule, TaskContext};

/// The most bytes a task's closure may capture (at an alignment of at most
/// 8) and still be stored in the scheduler's slot with no allocation; a
/// larger closure is boxed. The same holds for the value a one-shot task
/// returns to its [`ScheduledFuture`](crate::ScheduledFuture).
pub const INLINE_BYTES: usize = 16;

/// The storage: 16 bytes aligned to 4 (see the [module docs](self)).
type Words = MaybeUninit<[u32; 4]>;

/// Whether a `T` is kept in place (else it is boxed). The alignment bound
/// is the documented one of [`INLINE_BYTES`]; in place a value is only
/// ever copied, so any alignment would do.
const fn fits<T>() -> bool {
    size_of::<T>() <= INLINE_BYTES && align_of::<T>() <= 8
}

/// Moves `value` into `words`, boxing it if it does not fit (the storage
/// then holds the box's raw pointer).
///
/// # Safety
///
/// `words` holds nothing that still needs dropping.
unsafe fn put<T>(words: &mut Words, value: T) {
    let at = words.as_mut_ptr();
    if fits::<T>() {
        // SAFETY: a `T` fits the storage's size (`fits`); an unaligned write
        // needs no alignment; the caller says nothing there needs dropping.
        unsafe { ptr::write_unaligned(at.cast::<T>(), value) }
    } else {
        // SAFETY: a pointer is 8 bytes, which fit; as above.
        unsafe { ptr::write_unaligned(at.cast::<*mut T>(), Box::into_raw(Box::new(value))) }
    }
}

/// Moves the `T` out of `words`, which then hold nothing.
///
/// # Safety
///
/// `words` hold a `T` put there by [`put`], not taken since.
unsafe fn take<T>(words: &mut Words) -> T {
    let at = words.as_ptr();
    if fits::<T>() {
        // SAFETY: the caller says a `T` is there; reading it out moves it.
        unsafe { ptr::read_unaligned(at.cast::<T>()) }
    } else {
        // SAFETY: as above, for the pointer of the box `put` made, which
        // nothing else owns.
        unsafe { *Box::from_raw(ptr::read_unaligned(at.cast::<*mut T>())) }
    }
}

/// The `T` in `words`, in place: a boxed `T` only (the storage is not
/// aligned for one in place; a type that fits is refused at compile time).
///
/// # Safety
///
/// As [`take`]; the reference must not outlive the value.
unsafe fn get_mut<T>(words: &mut Words) -> &mut T {
    const { assert!(!fits::<T>(), "only a boxed value is borrowed in place") };
    // SAFETY: the caller says a `T` is there, so the storage holds the
    // pointer of its box (`put`), and `words` is borrowed mutably for as
    // long as the result: no other reference to the `T` exists meanwhile.
    unsafe { &mut *ptr::read_unaligned(words.as_ptr().cast::<*mut T>()) }
}

/// The `T` in `words`, shared.
///
/// # Safety
///
/// As [`get_mut`].
unsafe fn get<T>(words: &Words) -> &T {
    const { assert!(!fits::<T>(), "only a boxed value is borrowed in place") };
    // SAFETY: as `get_mut`, shared.
    unsafe { &*ptr::read_unaligned(words.as_ptr().cast::<*const T>()) }
}

/// Where [`TableRef`] offsets count from: a static of this module, aligned
/// as a table is.
#[repr(align(8))]
struct Origin(#[allow(dead_code)] u8); // a byte: a place of its own

static ORIGIN: Origin = Origin(0);

/// Tables too far from [`ORIGIN`] for an offset, by index: filled once per
/// such table, never emptied.
static FAR: RwLock<Vec<&'static Table>> = RwLock::new(Vec::new());

/// A reference to a table in 4 bytes: 0 for none (so zeroed memory is an
/// empty body); else the table's offset from [`ORIGIN`], always a multiple
/// of 8 (both are aligned to 8, see `Table`), so even; or, odd, 1 + 2 ×
/// the table's index in [`FAR`].
#[derive(Clone, Copy, PartialEq, Eq)]
struct TableRef(u32);

impl TableRef {
    const NONE: TableRef = TableRef(0);

    #[inline]
    fn new(table: &'static Table) -> TableRef {
        // Exposed: `get` makes a pointer to it again from an address.
        let at = ptr::from_ref(table).expose_provenance();
        match i32::try_from(at.wrapping_sub(origin()) as isize) {
            Ok(offset) if offset != 0 => TableRef(offset as u32),
            _ => TableRef::far(table),
        }
    }

    /// Through the registry, for a table no offset reaches.
    #[cold]
    #[inline(never)]
    fn far(table: &'static Table) -> TableRef {
        let index = |far: &[&'static Table]| far.iter().position(|&t| ptr::eq(t, table));
        let found = index(&FAR.read().unwrap_or_else(PoisonError::into_inner));
        let index = found.unwrap_or_else(|| {
            let mut far = FAR.write().unwrap_or_else(PoisonError::into_inner);
            index(&far).unwrap_or_else(|| {
                far.push(table);
                far.len() - 1
            })
        });
        // 2^31 tables would take 2^31 closure types: never.
        TableRef(u32::try_from(index).map_or(u32::MAX, |i| i << 1 | 1))
    }

    #[inline]
    fn get(self) -> Option<&'static Table> {
        match self.0 {
            0 => None,
            n if n & 1 == 0 => {
                let at = origin().wrapping_add_signed(n as i32 as isize);
                // SAFETY: `n` is the offset `new` took of a table's address,
                // which `new` exposed: the address is that table's, and a
                // table is a `'static` constant.
                Some(unsafe { &*ptr::with_exposed_provenance::<Table>(at) })
            }
            n => TableRef::far_table(n >> 1),
        }
    }

    #[cold]
    #[inline(never)]
    fn far_table(index: u32) -> Option<&'static Table> {
        let far = FAR.read().unwrap_or_else(PoisonError::into_inner);
        far.get(index as usize).copied()
    }
}

fn origin() -> usize {
    ptr::from_ref(&ORIGIN).addr()
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
/// reference to one is `'static` (promoted). Aligned to 8 (it holds
/// function pointers), as [`TableRef`] counts on.
#[repr(align(8))]
struct Table {
    holds: Holds,
    /// The body is a [`Named`] wrapper.
    named: bool,
    /// How the task repeats: none but for a periodic closure.
    ///
    /// # Safety
    ///
    /// The body holds this table's kind of content.
    rule: unsafe fn(&Body) -> Option<&Rule>,
    /// As `rule`, to change it.
    ///
    /// # Safety
    ///
    /// As `rule`.
    rule_mut: unsafe fn(&mut Body) -> Option<&mut Rule>,
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
    /// periodic closure is still in the body. Boxed: every run's outcome
    /// is moved about, and few panic.
    Panicked(Box<Error>),
}

impl Ran {
    /// A run that panicked with `payload`.
    fn panicked(payload: &(dyn std::any::Any + Send)) -> Ran {
        Ran::Panicked(Box::new(Error::from_panic(payload)))
    }
}

/// A task's body. See the [module docs](self).
///
/// All-zero bits are an empty body (no table), so a slab of them can come
/// from zeroed memory that costs nothing until it is touched.
pub(crate) struct Body {
    table: TableRef,
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

unsafe fn no_rule(_: &Body) -> Option<&Rule> {
    None
}

unsafe fn no_rule_mut(_: &mut Body) -> Option<&mut Rule> {
    None
}

const EMPTY: Table = Table {
    holds: Holds::Nothing,
    named: false,
    rule: no_rule,
    rule_mut: no_rule_mut,
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
        named: false,
        rule: no_rule,
        rule_mut: no_rule_mut,
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
        body.table = TableRef::NONE;
        // The value is dropped inside: a panicking destructor fails the task.
        match catch_unwind(AssertUnwindSafe(move || drop(f()))) {
            Ok(()) => Ran::Done,
            Err(payload) => Ran::panicked(payload.as_ref()),
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
        named: false,
        rule: no_rule,
        rule_mut: no_rule_mut,
        run: Self::run,
        clear: clear_as::<F>,
    };

    /// # Safety
    ///
    /// The body holds an `F`.
    unsafe fn run(body: &mut Body, _: &TaskContext) -> Ran {
        // SAFETY: as `OnceTables::run`.
        let f = unsafe { take::<F>(&mut body.words) };
        body.table = TableRef::NONE;
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(value) => {
                // SAFETY: the body is empty (the closure was taken).
                unsafe { put::<T>(&mut body.words, value) };
                body.table = TableRef::new(&OutputTable::<T>::TABLE);
                Ran::Done
            }
            Err(payload) => Ran::panicked(payload.as_ref()),
        }
    }
}

/// Drops the `V` a body holds, leaving it empty first.
///
/// # Safety
///
/// The body holds a `V`.
unsafe fn clear_as<V>(body: &mut Body) {
    body.table = TableRef::NONE;
    // SAFETY: the caller says a `V` is there; the body is already marked
    // empty, so it is taken exactly once, and a panicking destructor
    // leaves it empty.
    drop(unsafe { take::<V>(&mut body.words) });
}

/// The tables of a periodic closure: the closure and how it repeats.
struct PeriodicTables<F>(PhantomData<F>);

/// A periodic closure as stored: called in place for every run.
struct Periodic<F> {
    rule: Rule,
    f: F,
}

impl<F> PeriodicTables<F>
where
    F: FnMut(&TaskContext) + Send + 'static,
{
    const TABLE: Table = Table {
        holds: Holds::Closure,
        named: false,
        rule: Self::rule,
        rule_mut: Self::rule_mut,
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
            Err(payload) => Ran::panicked(payload.as_ref()),
        }
    }

    /// # Safety
    ///
    /// The body holds a `Periodic<F>`.
    unsafe fn rule(body: &Body) -> Option<&Rule> {
        // SAFETY: the caller says a `Periodic<F>` is there.
        Some(&unsafe { get::<Periodic<F>>(&body.words) }.rule)
    }

    /// # Safety
    ///
    /// The body holds a `Periodic<F>`.
    unsafe fn rule_mut(body: &mut Body) -> Option<&mut Rule> {
        // SAFETY: the caller says a `Periodic<F>` is there.
        Some(&mut unsafe { get_mut::<Periodic<F>>(&mut body.words) }.rule)
    }
}

/// The tables of a value a one-shot left for its future.
struct OutputTable<T>(PhantomData<T>);

impl<T: Send + 'static> OutputTable<T> {
    const TABLE: Table = Table {
        holds: Holds::Output(TypeId::of::<T>),
        named: false,
        rule: no_rule,
        rule_mut: no_rule_mut,
        run: run_nothing,
        clear: clear_as::<T>,
    };
}

const FAILURE: Table = Table {
    holds: Holds::Failure,
    named: false,
    rule: no_rule,
    rule_mut: no_rule_mut,
    run: run_nothing,
    clear: clear_as::<Error>,
};

/// A named task's body: its name, and the body it wraps. It costs the
/// task one allocation (40 bytes do not fit in place); unnamed tasks never
/// meet it.
struct Named {
    name: Arc<str>,
    inner: Body,
}

const NAMED: Table = Table {
    holds: Holds::Closure,
    named: true,
    rule: named_rule,
    rule_mut: named_rule_mut,
    run: run_named,
    clear: clear_as::<Named>,
};

/// # Safety
///
/// The body holds a `Named`.
unsafe fn named_rule(body: &Body) -> Option<&Rule> {
    // SAFETY: the caller says a `Named` is there.
    unsafe { get::<Named>(&body.words) }.inner.rule()
}

/// # Safety
///
/// The body holds a `Named`.
unsafe fn named_rule_mut(body: &mut Body) -> Option<&mut Rule> {
    // SAFETY: the caller says a `Named` is there.
    unsafe { get_mut::<Named>(&mut body.words) }
        .inner
        .rule_mut()
}

/// Runs the wrapped closure. A periodic one stays wrapped, name and all,
/// for its next run; a one-shot's value (or nothing) takes the wrapper's
/// place, so that the body holds what an unnamed task's would.
///
/// # Safety
///
/// The body holds a `Named`.
unsafe fn run_named(body: &mut Body, context: &TaskContext) -> Ran {
    // SAFETY: the caller says a `Named` is there; the inner body catches
    // its closure's panic, so nothing unwinds through here.
    let named = unsafe { get_mut::<Named>(&mut body.words) };
    let ran = named.inner.run(context);
    if named.inner.rule().is_some() {
        return ran;
    }
    let inner = std::mem::take(&mut named.inner);
    body.clear();
    *body = inner;
    ran
}

impl Body {
    /// An empty body.
    pub(crate) const fn empty() -> Body {
        Body {
            table: TableRef::NONE,
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

    /// A periodic closure, called once per run, and how it repeats.
    pub(crate) fn periodic<F>(rule: Rule, f: F) -> Body
    where
        F: FnMut(&TaskContext) + Send + 'static,
    {
        Body::holding(Periodic { rule, f }, &PeriodicTables::<F>::TABLE)
    }

    /// Why a task failed, kept for its handles.
    pub(crate) fn failure(error: Error) -> Body {
        Body::holding(error, &FAILURE)
    }

    /// `inner`, carrying `name` (which replaces the name of a named one).
    pub(crate) fn named(name: Arc<str>, mut inner: Body) -> Body {
        if inner.table().named {
            // SAFETY: the table says a `Named` is there.
            unsafe { get_mut::<Named>(&mut inner.words) }.name = name;
            return inner;
        }
        Body::holding(Named { name, inner }, &NAMED)
    }

    /// The task's name, if it has one (until a one-shot's run).
    #[inline]
    pub(crate) fn name(&self) -> Option<&Arc<str>> {
        if !self.table().named {
            return None;
        }
        // SAFETY: the table says a `Named` is there, and `self` is borrowed
        // for as long as the reference.
        Some(&unsafe { get::<Named>(&self.words) }.name)
    }

    fn table(&self) -> &'static Table {
        self.table.get().unwrap_or(&EMPTY)
    }

    fn holding<V>(value: V, table: &'static Table) -> Body {
        let mut body = Body::empty();
        // SAFETY: a new body holds nothing; `table` is the one for `V` (each
        // constructor pairs them).
        unsafe { put::<V>(&mut body.words, value) };
        body.table = TableRef::new(table);
        body
    }

    /// True when the body holds nothing.
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self.table().holds, Holds::Nothing)
    }

    /// How the closure repeats (`Once` for anything but a periodic closure).
    pub(crate) fn repeat(&self) -> Repeat {
        self.rule().map_or(Repeat::Once, |rule| rule.repeat)
    }

    /// The rule of a periodic closure.
    pub(crate) fn rule(&self) -> Option<&Rule> {
        // SAFETY: each table's `rule` is called on a body holding its
        // content.
        unsafe { (self.table().rule)(self) }
    }

    /// The rule of a periodic closure, to change it.
    pub(crate) fn rule_mut(&mut self) -> Option<&mut Rule> {
        // SAFETY: each table's `rule_mut` is called on a body holding its
        // content.
        unsafe { (self.table().rule_mut)(self) }
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
                self.table = TableRef::NONE;
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

#[cfg(test)]
mod test {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;

    use super::*;

    /// Counts its drops.
    #[derive(Clone, Default)]
    struct Drops(Arc<AtomicUsize>);

    impl Drops {
        fn count(&self) -> usize {
            self.0.load(SeqCst)
        }
    }

    struct Counted(Drops);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0 .0.fetch_add(1, SeqCst);
        }
    }

    fn ran(body: &mut Body) -> Ran {
        body.run(&TaskContext::default())
    }

    #[test]
    fn small_captures_stay_in_place_large_ones_are_boxed() {
        assert!(
            fits::<(Arc<()>, u64)>(),
            "an id and an Arc: the common case"
        );
        assert!(fits::<[u8; INLINE_BYTES]>());
        assert!(!fits::<[u8; INLINE_BYTES + 1]>());
        assert!(!fits::<u128>(), "aligned to 16: boxed");
        assert_eq!(size_of::<Body>(), 20);
        assert_eq!(size_of::<Option<Body>>(), 24, "no niche is claimed");
    }

    #[test]
    fn a_table_far_from_the_origin_goes_through_the_registry() {
        let near = TableRef::new(&EMPTY);
        assert_eq!(near.0 & 1, 0, "an offset: this binary's tables are near");
        assert!(ptr::eq(near.get().expect("a table"), &EMPTY));
        let far = TableRef::far(&FAILURE);
        assert_eq!(far.0 & 1, 1);
        assert!(TableRef::far(&FAILURE) == far, "registered once");
        assert!(ptr::eq(far.get().expect("a table"), &FAILURE));
        assert!(TableRef::NONE.get().is_none());
        // A body whose table is registered works as any other.
        let drops = Drops::default();
        let (once, never) = (Counted(drops.clone()), Counted(drops.clone()));
        let mut ran_body = Body::once(move || drop(once));
        let mut dropped = Body::once(move || drop(never));
        for body in [&mut ran_body, &mut dropped] {
            body.table = TableRef::far(body.table());
            assert_eq!(body.table.0 & 1, 1);
        }
        assert!(matches!(ran(&mut ran_body), Ran::Done));
        drop(dropped);
        assert_eq!(drops.count(), 2);
    }

    #[test]
    fn a_one_shot_runs_once_and_its_captures_drop_once() {
        for big in [false, true] {
            let drops = Drops::default();
            let (counted, pad) = (Counted(drops.clone()), [0u8; 64]);
            let mut body = if big {
                Body::once(move || drop((counted, pad)))
            } else {
                Body::once(move || drop(counted))
            };
            assert!(matches!(ran(&mut body), Ran::Done));
            assert_eq!(drops.count(), 1);
            assert!(body.is_empty());
            assert!(
                matches!(ran(&mut body), Ran::Done),
                "an empty body does nothing"
            );
            drop(body);
            assert_eq!(drops.count(), 1);
        }
    }

    #[test]
    fn a_closure_never_run_is_dropped_with_its_body() {
        let drops = Drops::default();
        let counted = Counted(drops.clone());
        let mut body = Body::once(move || drop(counted));
        body.clear();
        assert_eq!(drops.count(), 1);
        body.clear();
        drop(body);
        assert_eq!(drops.count(), 1);
    }

    #[test]
    fn a_value_stays_for_its_future_and_is_taken_once() {
        let drops = Drops::default();
        let d = drops.clone();
        let mut small = Body::with_output(move || Counted(d));
        assert!(matches!(ran(&mut small), Ran::Done));
        assert!(small.take_output::<u32>().is_none(), "the wrong type");
        let value = small.take_output::<Counted>().expect("the value");
        assert!(small.take_output::<Counted>().is_none(), "taken once");
        drop(value);
        let mut big = Body::with_output(|| [7u64; 9]);
        assert!(matches!(ran(&mut big), Ran::Done));
        assert_eq!(big.take_output::<[u64; 9]>(), Some([7; 9]));
        // Never taken: dropped with the body.
        let d = drops.clone();
        let mut left = Body::with_output(move || Counted(d));
        assert!(matches!(ran(&mut left), Ran::Done));
        drop(left);
        assert_eq!(drops.count(), 2);
    }

    #[test]
    fn a_periodic_closure_runs_in_place_until_it_stops() {
        let drops = Drops::default();
        let counted = Counted(drops.clone());
        let mut runs = 0;
        let mut body = Body::periodic(
            Rule::new(Repeat::FixedRate(10), None),
            move |run: &TaskContext| {
                let _ = &counted;
                runs += 1;
                if runs == 3 {
                    run.stop();
                }
            },
        );
        assert_eq!(body.repeat(), Repeat::FixedRate(10));
        assert!(matches!(ran(&mut body), Ran::Again));
        assert!(matches!(ran(&mut body), Ran::Again));
        assert!(matches!(ran(&mut body), Ran::Done), "stopped itself");
        assert_eq!(drops.count(), 0, "still in the body");
        drop(body);
        assert_eq!(drops.count(), 1);
    }

    #[test]
    fn a_panic_is_caught_and_nothing_is_dropped_twice() {
        let drops = Drops::default();
        let counted = Counted(drops.clone());
        let mut once = Body::once(move || {
            let _c = counted;
            panic!("once")
        });
        match ran(&mut once) {
            Ran::Panicked(e) => assert_eq!(e.panic_message(), Some("once")),
            _ => panic!("not reported"),
        }
        assert!(once.is_empty());
        assert_eq!(drops.count(), 1, "dropped while unwinding");
        let counted = Counted(drops.clone());
        let mut periodic = Body::periodic(
            Rule::new(Repeat::FixedDelay(1), None),
            move |_: &TaskContext| {
                let _ = &counted;
                panic!("periodic")
            },
        );
        assert!(matches!(ran(&mut periodic), Ran::Panicked(_)));
        assert_eq!(drops.count(), 1, "a periodic closure stays after a panic");
        periodic.clear();
        assert_eq!(drops.count(), 2);
    }

    #[test]
    fn a_name_wraps_any_body_and_a_one_shot_sheds_it_when_it_runs() {
        let drops = Drops::default();
        let d = drops.clone();
        let mut once = Body::named("first".into(), Body::with_output(move || Counted(d)));
        assert_eq!(once.name().map(|n| &**n), Some("first"));
        once = Body::named("second".into(), once);
        assert_eq!(
            once.name().map(|n| &**n),
            Some("second"),
            "renamed, not wrapped twice"
        );
        assert_eq!(once.repeat(), Repeat::Once);
        assert!(matches!(ran(&mut once), Ran::Done));
        assert_eq!(once.name(), None, "the value takes the wrapper's place");
        let value = once.take_output::<Counted>().expect("the value");
        drop(value);
        assert_eq!(drops.count(), 1);

        let counted = Counted(drops.clone());
        let mut runs = 0;
        let rule = Rule::new(Repeat::FixedDelay(5), None);
        let inner = Body::periodic(rule, move |run: &TaskContext| {
            let _ = &counted;
            runs += 1;
            if runs == 2 {
                run.stop();
            }
        });
        let mut periodic = Body::named("beat".into(), inner);
        assert_eq!(periodic.repeat(), Repeat::FixedDelay(5));
        assert!(periodic.rule_mut().is_some());
        assert!(matches!(ran(&mut periodic), Ran::Again));
        assert_eq!(
            periodic.name().map(|n| &**n),
            Some("beat"),
            "kept between runs"
        );
        assert!(matches!(ran(&mut periodic), Ran::Done));
        assert_eq!(drops.count(), 1);
        drop(periodic);
        assert_eq!(drops.count(), 2);

        let mut failing = Body::named("boom".into(), Body::once(|| panic!("boom")));
        assert!(matches!(ran(&mut failing), Ran::Panicked(_)));
        assert!(failing.is_empty());
    }

    #[test]
    fn a_panicking_destructor_leaves_the_body_empty() {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("bomb");
            }
        }
        let bomb = Bomb;
        let mut body = Body::once(move || drop(bomb));
        let caught = catch_unwind(AssertUnwindSafe(|| body.clear()));
        assert!(caught.is_err());
        assert!(body.is_empty(), "emptied before the destructor ran");
        drop(body); // nothing left: no second panic
        let failure = Body::failure(Error::from_panic(&"why"));
        assert_eq!(
            failure.failure_ref().and_then(Error::panic_message),
            Some("why")
        );
    }
}
