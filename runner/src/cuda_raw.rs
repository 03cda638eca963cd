//! Owned wrappers over the CUDA driver calls that dfdx does not make for us (page-locked host
//! memory, streams, events, raw device buffers, the device's memory pool), shared by the
//! `transfer` stage and the CUDA training path. Every handle is released on drop; every call
//! that fails says which driver call it was.
//!
//! Callers bind the device's context to their thread first (cudarc's `CudaDevice::new` or
//! `bind_to_thread`); every function here acts on the current context.

use std::ptr;

use cudarc::driver::{result, sys, DriverError};

/// A driver call that failed: which one, and the driver's code and text.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{action}: {message}")]
pub struct CudaFailure {
    pub action: &'static str,
    pub message: String,
}

/// `r` with its error described as a [`CudaFailure`] of `action`.
pub fn call<T>(action: &'static str, r: Result<T, DriverError>) -> Result<T, CudaFailure> {
    r.map_err(|e| CudaFailure {
        action,
        message: describe(&e),
    })
}

/// `CUDA_ERROR_X: text`. Not `DriverError`'s own Display: it panics when the driver cannot
/// describe the code (an unloaded or stand-in driver).
pub fn describe(e: &DriverError) -> String {
    match e.error_string() {
        Ok(text) => format!("{:?}: {}", e.0, text.to_string_lossy()),
        Err(_) => format!("{:?}", e.0),
    }
}

fn mib(len: usize) -> String {
    format!("{:.1} MiB", len as f64 / (1024.0 * 1024.0))
}

/// Waits for all work in the current context, on every stream.
pub fn ctx_sync() -> Result<(), CudaFailure> {
    // SAFETY: no arguments; requires only a current context, which the caller binds.
    call("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() }.result())
}

/// Waits for the work queued on a stream this code does not own (dfdx's).
pub fn stream_sync(stream: sys::CUstream) -> Result<(), CudaFailure> {
    // SAFETY: a live stream handle, borrowed; synchronizing does not take or end it.
    call("cuStreamSynchronize", unsafe { result::stream::synchronize(stream) })
}

/// A non-blocking stream, destroyed on drop.
pub struct Stream(pub sys::CUstream);

impl Stream {
    pub fn new() -> Result<Self, CudaFailure> {
        let kind = result::stream::StreamKind::NonBlocking;
        call("cuStreamCreate", result::stream::create(kind)).map(Stream)
    }

    pub fn sync(&self) -> Result<(), CudaFailure> {
        // SAFETY: the stream was created by `Stream::new` and is destroyed only on drop.
        call("cuStreamSynchronize", unsafe { result::stream::synchronize(self.0) })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: created by `Stream::new`, destroyed once; pending work completes first.
        unsafe {
            let _ = result::stream::synchronize(self.0);
            let _ = result::stream::destroy(self.0);
        }
    }
}

/// A CUDA event, destroyed on drop.
pub struct Event(sys::CUevent);

impl Event {
    /// An event that can time (`timing`), or a cheaper one that can only be waited on.
    pub fn new(timing: bool) -> Result<Self, CudaFailure> {
        let flags = if timing {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        call("cuEventCreate", result::event::create(flags)).map(Event)
    }

    /// Records the event at the current end of `stream` (the null stream is dfdx's), without
    /// waiting for anything.
    pub fn record(&self, stream: sys::CUstream) -> Result<(), CudaFailure> {
        // SAFETY: the event is live; the stream is live or the null stream of the current context.
        call("cuEventRecord", unsafe { result::event::record(self.0, stream) })
    }

    /// Makes `stream` wait for the work recorded before the event; the host does not wait.
    pub fn wait_on(&self, stream: sys::CUstream) -> Result<(), CudaFailure> {
        let flags = sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT;
        // SAFETY: the event is live; the stream is live or the null stream of the current context.
        call("cuStreamWaitEvent", unsafe {
            result::stream::wait_event(stream, self.0, flags)
        })
    }

    /// Waits until the work recorded before the event is done.
    pub fn wait(&self) -> Result<(), CudaFailure> {
        // SAFETY: the event is live.
        call(
            "cuEventSynchronize",
            unsafe { sys::cuEventSynchronize(self.0) }.result(),
        )
    }

    /// Whether the work recorded before the event is done; never waits.
    pub fn ready(&self) -> Result<bool, CudaFailure> {
        // SAFETY: the event is live.
        match unsafe { sys::cuEventQuery(self.0) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => call("cuEventQuery", other.result()).map(|()| false),
        }
    }

    /// Seconds between two completed timing events (`cuEventElapsedTime`); does not wait.
    pub fn seconds_since(&self, start: &Event) -> Result<f64, CudaFailure> {
        // SAFETY: both events were created with timing and are live.
        let ms = call("cuEventElapsedTime", unsafe { result::event::elapsed(start.0, self.0) })?;
        Ok(f64::from(ms) / 1e3)
    }

    /// Waits for `end`, then returns the seconds between the two recorded events.
    pub fn seconds_between(start: &Event, end: &Event) -> Result<f64, CudaFailure> {
        end.wait()?;
        end.seconds_since(start)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created by `Event::new`, destroyed once.
        let _ = unsafe { result::event::destroy(self.0) };
    }
}

/// `len` bytes of device memory from `cuMemAlloc`, freed on drop.
pub struct DeviceBuf {
    pub ptr: sys::CUdeviceptr,
}

impl DeviceBuf {
    pub fn new(len: usize) -> Result<Self, CudaFailure> {
        // SAFETY: plain allocation; the contents are only ever copied, never interpreted.
        unsafe { result::malloc_sync(len) }
            .map(|ptr| DeviceBuf { ptr })
            .map_err(|e| CudaFailure {
                action: "cuMemAlloc",
                message: format!("{} of device memory: {}", mib(len), describe(&e)),
            })
    }

    /// A buffer whose every byte is `fill`.
    pub fn filled(len: usize, fill: u8) -> Result<Self, CudaFailure> {
        let buf = Self::new(len)?;
        // SAFETY: `buf` holds `len` bytes.
        call("cuMemsetD8", unsafe { result::memset_d8_sync(buf.ptr, fill, len) })?;
        // The memset is queued on the null stream and may return before it is done; copies on
        // other streams must not read the buffer before it is.
        ctx_sync()?;
        Ok(buf)
    }
}

impl Drop for DeviceBuf {
    fn drop(&mut self) {
        // SAFETY: allocated by `malloc_sync`, freed once; callers synchronize before dropping
        // a buffer that a stream may still use.
        let _ = unsafe { result::free_sync(self.ptr) };
    }
}

/// `len` bytes of page-locked host memory from `cuMemHostAlloc`, freed on drop. Only ever
/// handed to the driver as a raw pointer or written through [`PinnedBuf::write`], so unwritten
/// contents are never read by Rust.
pub struct PinnedBuf {
    pub ptr: *mut u8,
    pub len: usize,
}

impl PinnedBuf {
    pub fn new(len: usize) -> Result<Self, CudaFailure> {
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; flags 0 = plain page-locked memory.
        unsafe { sys::cuMemHostAlloc(&mut raw, len.max(1), 0) }
            .result()
            .map_err(|e| CudaFailure {
                action: "cuMemHostAlloc",
                message: format!("{} of pinned host memory: {}", mib(len), describe(&e)),
            })?;
        Ok(PinnedBuf { ptr: raw.cast(), len })
    }

    /// A buffer whose every byte is `fill`.
    pub fn filled(len: usize, fill: u8) -> Result<Self, CudaFailure> {
        let buf = Self::new(len)?;
        // SAFETY: `ptr` points to `len` writable bytes owned by this buffer.
        unsafe { ptr::write_bytes(buf.ptr, fill, buf.len) };
        Ok(buf)
    }

    /// Copies `values` to the start of the buffer; `None` when they do not fit.
    ///
    /// # Safety
    /// No copy queued on a stream may still be reading the buffer.
    pub unsafe fn write(&mut self, values: &[f32]) -> Option<usize> {
        let bytes = std::mem::size_of_val(values);
        if bytes > self.len {
            return None;
        }
        // SAFETY: `values` is `bytes` readable bytes, the buffer owns `len >= bytes` writable
        // ones that nothing else reads (the caller's contract), and host memory from the driver
        // never overlaps a Rust slice.
        unsafe { ptr::copy_nonoverlapping(values.as_ptr().cast::<u8>(), self.ptr, bytes) };
        Some(bytes)
    }
}

impl Drop for PinnedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated by `cuMemHostAlloc`, freed once, after every copy using it was
        // synchronized.
        let _ = unsafe { sys::cuMemFreeHost(self.ptr.cast()) };
    }
}

/// Stream-ordered copy of `len` bytes from page-locked `src` to device memory `dst`.
///
/// # Safety
/// `dst` and `src` must hold at least `len` bytes, and both must stay alive (and `src`
/// unwritten) until the copy is done on `stream`.
pub unsafe fn htod_async(
    dst: sys::CUdeviceptr,
    src: *const u8,
    len: usize,
    stream: sys::CUstream,
) -> Result<(), CudaFailure> {
    // SAFETY: forwarded to the caller's contract.
    call(
        "cuMemcpyHtoDAsync",
        unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), len, stream) }.result(),
    )
}

/// Stream-ordered copy of `len` bytes from device memory `src` to page-locked `dst`.
///
/// # Safety
/// `dst` and `src` must hold at least `len` bytes, and both must stay alive until the copy is
/// done on `stream`.
pub unsafe fn dtoh_async(
    dst: *mut u8,
    src: sys::CUdeviceptr,
    len: usize,
    stream: sys::CUstream,
) -> Result<(), CudaFailure> {
    // SAFETY: forwarded to the caller's contract.
    call(
        "cuMemcpyDtoHAsync",
        unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, len, stream) }.result(),
    )
}

/// The default memory pool of a device: where stream-ordered allocations (`cuMemAllocAsync`,
/// which cudarc uses when the device supports pools) come from.
pub struct MemPool(sys::CUmemoryPool);

impl MemPool {
    /// Device `ordinal`'s current pool (the one `cuMemAllocAsync` draws from); `None` when the
    /// device has no memory pools.
    pub fn of_device(ordinal: i32) -> Result<Option<Self>, CudaFailure> {
        let dev = call("cuDeviceGet", result::device::get(ordinal))?;
        // SAFETY: `dev` is a valid device handle.
        let pools = call("cuDeviceGetAttribute", unsafe {
            result::device::get_attribute(
                dev,
                sys::CUdevice_attribute_enum::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
            )
        })?;
        if pools <= 0 {
            return Ok(None);
        }
        let mut pool = ptr::null_mut();
        // SAFETY: `pool` is a valid out-pointer and `dev` a valid device.
        let status = unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, dev) };
        call("cuDeviceGetDefaultMemPool", status.result())?;
        Ok(Some(MemPool(pool)))
    }

    fn set(&self, attr: sys::CUmemPool_attribute, mut value: u64) -> Result<(), CudaFailure> {
        // SAFETY: the pool is live and these attributes take a `cuuint64_t`.
        call(
            "cuMemPoolSetAttribute",
            unsafe { sys::cuMemPoolSetAttribute(self.0, attr, (&mut value as *mut u64).cast()) }.result(),
        )
    }

    fn get(&self, attr: sys::CUmemPool_attribute) -> Result<u64, CudaFailure> {
        let mut value = 0u64;
        // SAFETY: as in `set`.
        let status = unsafe { sys::cuMemPoolGetAttribute(self.0, attr, (&mut value as *mut u64).cast()) };
        call("cuMemPoolGetAttribute", status.result())?;
        Ok(value)
    }

    /// The bytes the pool may keep reserved beyond what is in use (`RELEASE_THRESHOLD`).
    pub fn release_threshold(&self) -> Result<u64, CudaFailure> {
        self.get(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    }

    /// Sets what [`MemPool::release_threshold`] reads. `u64::MAX` keeps freed memory in the
    /// pool instead of returning it to the driver at each synchronization (the default is 0
    /// bytes), so a training step does not pay for fresh mappings after every loss read.
    pub fn set_release_threshold(&self, bytes: u64) -> Result<(), CudaFailure> {
        self.set(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, bytes)
    }

    /// Returns the pool's unused memory to the driver. Memory freed on a stream counts as
    /// unused once the stream has reached the free: synchronize first.
    pub fn trim(&self) -> Result<(), CudaFailure> {
        // SAFETY: the pool is live.
        call("cuMemPoolTrimTo", unsafe { sys::cuMemPoolTrimTo(self.0, 0) }.result())
    }

    /// Starts the high-water marks over from what is in use now.
    pub fn reset_peaks(&self) -> Result<(), CudaFailure> {
        self.set(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0)?;
        self.set(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0)
    }

    /// (bytes in use at the high-water mark, bytes reserved from the driver at its high-water
    /// mark) since the last [`MemPool::reset_peaks`].
    pub fn peaks(&self) -> Result<(u64, u64), CudaFailure> {
        Ok((
            self.get(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH)?,
            self.get(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)?,
        ))
    }
}
