#![no_main]
//! See `quiver::fuzzing::openapi`. The import's memory is held to a bound
//! of the document's size by a counting allocator (libFuzzer's own malloc
//! limit needs a sanitizer, which the stable toolchain does not give): a
//! document whose import grows with the square of its size (issue 28, M1)
//! fails here long before it fails a machine.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes the import may take per byte of document, as the issue asks.
const PER_BYTE: usize = 20;
/// Bytes it may take whatever the document (the importer's fixed costs).
const FIXED: usize = 16 << 20;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; the
// counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(pointer, layout, size) };
        if !moved.is_null() {
            if size > layout.size() {
                let live = LIVE.fetch_add(size - layout.size(), Ordering::Relaxed) + size - layout.size();
                PEAK.fetch_max(live, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - size, Ordering::Relaxed);
            }
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    quiver::fuzzing::openapi(data);
    let taken = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    let bound = PER_BYTE * data.len() + FIXED;
    assert!(taken <= bound, "importing {} bytes took {taken} bytes at its peak, over {bound}", data.len());
});
