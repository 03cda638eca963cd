//! What the self-checks (`super::super::tc_check`) read of a [`TcEngine`] and set in it: its
//! buffers, its state on the device, its gradients, and the loss scale. Each call synchronizes
//! the engine's stream, so none of it belongs on the training path.

use super::TcEngine;
use crate::cuda_raw::call;
use crate::tensor::tc::math::Control;
use crate::tensor::tc::plan::{self, Buf};
use crate::tensor::TrainError;
use cudarc::driver::result;

impl TcEngine {
    /// `n` values of `buf`, after everything queued so far (synchronizes; checks and the end of
    /// training only).
    pub(in crate::tensor::cuda) fn read(&self, buf: Buf, n: usize) -> Result<Vec<f32>, TrainError> {
        self.stream.sync()?;
        let mut out = vec![0f32; n];
        // SAFETY: `buf` holds at least `n` f32 values; the stream is idle.
        call("cuMemcpyDtoH", unsafe {
            result::memcpy_dtoh_sync(&mut out, self.ptr(buf)?)
        })?;
        Ok(out)
    }

    /// The step's state on the device.
    pub(in crate::tensor::cuda) fn control(&self) -> Result<Control, TrainError> {
        self.stream.sync()?;
        let mut control = [Control::default()];
        let src = self.ptr(Buf::Control)?;
        // SAFETY: the control buffer holds one `Control` (plain `repr(C)` data: any bits of its
        // fields are valid); the stream is idle.
        let copied = unsafe { result::memcpy_dtoh_sync(&mut control, src) };
        call("cuMemcpyDtoH (control)", copied)?;
        Ok(control[0])
    }

    /// Sets the loss scale the next step seeds its backward pass with (the self-check's search
    /// for a scale at which f16 gradients stay finite, as the dynamic scaler's first steps do).
    pub(in crate::tensor::cuda) fn set_loss_scale(&mut self, scale: f32) -> Result<(), TrainError> {
        let mut control = [self.control()?];
        control[0].loss_scale = scale;
        let dst = self.ptr(Buf::Control)?;
        // SAFETY: the control buffer holds one `Control`; the stream is idle (`control` waited).
        let copied = unsafe { result::memcpy_htod_sync(dst, &control) };
        call("cuMemcpyHtoD (control)", copied)?;
        Ok(())
    }

    /// The graphs captured so far.
    pub(in crate::tensor::cuda) fn captures(&self) -> u64 {
        self.captures
    }

    /// The gradients the last step left, divided by the current loss scale: unscaled after a
    /// step without the update (the scale is what seeded it), and after one whose update left
    /// the scale unchanged; the self-checks call it only there, or on two engines alike.
    pub(in crate::tensor::cuda) fn grads(&self) -> Result<Vec<Vec<f32>>, TrainError> {
        let scale = self.control()?.loss_scale;
        plan::param_sizes(&self.widths)
            .into_iter()
            .enumerate()
            .map(|(p, n)| Ok(self.read(Buf::Grad(p), n)?.into_iter().map(|g| g / scale).collect()))
            .collect()
    }
}
