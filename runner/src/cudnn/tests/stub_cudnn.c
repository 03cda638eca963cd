/* A stand-in libcudnn.so.9 for the tests: every function the recurrent path calls, logging its
   call and arguments, one line each, to a buffer the test reads with stub_log(). Handles and
   descriptors are small distinct numbers; the weight space is laid out as cuDNN's standard
   algorithm does: per layer, the matrices of linear layer IDs 0..2g-1, then their biases. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stddef.h>

static char log_buf[1 << 16];
static size_t log_len;
static long next_id = 0x100;
static const char *fail_name;
static int mode, input_size, hidden_size, layers;
static int desc_dims[4096][3];

static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(log_buf + log_len, sizeof log_buf - log_len, fmt, ap);
  va_end(ap);
  if (n > 0 && log_len + n + 1 < sizeof log_buf) { log_len += n; log_buf[log_len++] = '\n'; log_buf[log_len] = 0; }
}
static int status(const char *name) { return fail_name && !strcmp(fail_name, name) ? 3 : 0; }
static void *make(const char *kind) { long id = next_id++; say("create %s %ld", kind, id); return (void *)id; }
static void gone(const char *kind, void *d) { say("destroy %s %ld", kind, (long)d); }

const char *stub_log(void) { return log_buf; }
void stub_fail(const char *name) { fail_name = name; }

size_t cudnnGetVersion(void) { return 91002; }
const char *cudnnGetErrorString(int s) { return s ? "CUDNN_STATUS_BAD_PARAM" : "CUDNN_STATUS_SUCCESS"; }
int cudnnCreate(void **h) { *h = make("handle"); return 0; }
int cudnnDestroy(void *h) { gone("handle", h); return 0; }
int cudnnSetStream(void *h, void *s) { say("cudnnSetStream %p", s); return 0; }
int cudnnCreateTensorDescriptor(void **d) { *d = make("tensor"); return 0; }
int cudnnDestroyTensorDescriptor(void *d) { gone("tensor", d); return 0; }
int cudnnSetTensorNdDescriptor(void *d, int t, int n, const int *dims, const int *strides) {
  say("cudnnSetTensorNdDescriptor type=%d dims=%d,%d,%d strides=%d,%d,%d", t, dims[0], dims[1], dims[2],
      strides[0], strides[1], strides[2]);
  return status("cudnnSetTensorNdDescriptor");
}
int cudnnGetTensorNdDescriptor(void *d, int req, int *t, int *n, int *dims, int *strides) {
  long i = (long)d;
  *t = 0; *n = 3;
  for (int k = 0; k < 3; k++) dims[k] = desc_dims[i][k];
  strides[0] = dims[1] * dims[2]; strides[1] = dims[2]; strides[2] = 1;
  return 0;
}
int cudnnCreateDropoutDescriptor(void **d) { *d = make("dropout"); return 0; }
int cudnnDestroyDropoutDescriptor(void *d) { gone("dropout", d); return 0; }
int cudnnDropoutGetStatesSize(void *h, size_t *bytes) { *bytes = 4096; say("cudnnDropoutGetStatesSize"); return 0; }
int cudnnSetDropoutDescriptor(void *d, void *h, float p, void *states, size_t bytes, unsigned long long seed) {
  say("cudnnSetDropoutDescriptor p=%g states=%p bytes=%zu seed=%llu", p, states, bytes, seed);
  return status("cudnnSetDropoutDescriptor");
}
int cudnnCreateRNNDescriptor(void **d) { *d = make("rnn"); return 0; }
int cudnnDestroyRNNDescriptor(void *d) { gone("rnn", d); return 0; }
int cudnnSetRNNDescriptor_v8(void *d, int algo, int cell, int bias, int dir, int in_mode, int dtype, int math_prec,
                             int math_type, int in, int hidden, int proj, int n_layers, void *dropout, unsigned aux) {
  mode = cell; input_size = in; hidden_size = hidden; layers = n_layers;
  say("cudnnSetRNNDescriptor_v8 algo=%d cell=%d bias=%d dir=%d input_mode=%d type=%d math_prec=%d math_type=%d "
      "input=%d hidden=%d proj=%d layers=%d dropout=%ld aux=%u",
      algo, cell, bias, dir, in_mode, dtype, math_prec, math_type, in, hidden, proj, n_layers, (long)dropout, aux);
  return status("cudnnSetRNNDescriptor_v8");
}
int cudnnCreateRNNDataDescriptor(void **d) { *d = make("rnn_data"); return 0; }
int cudnnDestroyRNNDataDescriptor(void *d) { gone("rnn_data", d); return 0; }
int cudnnSetRNNDataDescriptor(void *d, int dtype, int layout, int max_seq, int batch, int vec, const int *lengths,
                              void *fill) {
  int same = 1;
  for (int b = 0; b < batch; b++) same &= lengths[b] == max_seq;
  say("cudnnSetRNNDataDescriptor type=%d layout=%d max_seq=%d batch=%d vector=%d all_lengths_max=%d fill=%g", dtype,
      layout, max_seq, batch, vec, same, *(float *)fill);
  return 0;
}
static int gates(void) { return mode == 2 ? 4 : 3; }
static size_t layer_floats(int l) {
  int in = l == 0 ? input_size : hidden_size, g = gates(), h = hidden_size;
  return (size_t)g * h * in + (size_t)g * h * h + 2 * (size_t)g * h;
}
int cudnnGetRNNWeightSpaceSize(void *h, void *d, size_t *bytes) {
  size_t n = 0;
  for (int l = 0; l < layers; l++) n += layer_floats(l);
  *bytes = 4 * n;
  say("cudnnGetRNNWeightSpaceSize -> %zu", *bytes);
  return 0;
}
int cudnnGetRNNTempSpaceSizes(void *h, void *d, int fwd, void *x, size_t *work, size_t *reserve) {
  *work = 1000 + (size_t)layers * hidden_size;
  *reserve = fwd == 1 ? 2000 + (size_t)input_size * hidden_size : 0;
  say("cudnnGetRNNTempSpaceSizes fwd=%d -> work=%zu reserve=%zu", fwd, *work, *reserve);
  return status("cudnnGetRNNTempSpaceSizes");
}
int cudnnGetRNNWeightParams(void *h, void *d, int layer, size_t bytes, const void *w, int id, void *m_desc,
                            void **m, void *b_desc, void **b) {
  int g = gates(), hs = hidden_size, in = layer == 0 ? input_size : hidden_size;
  size_t start = 0;
  for (int l = 0; l < layer; l++) start += layer_floats(l);
  size_t mats = start;
  for (int k = 0; k < id; k++) mats += (size_t)hs * (k < g ? in : hs);
  size_t biases = start + (size_t)g * hs * in + (size_t)g * hs * hs + (size_t)id * hs;
  *m = (char *)w + 4 * mats;
  *b = (char *)w + 4 * biases;
  int *md = desc_dims[(long)m_desc], *bd = desc_dims[(long)b_desc];
  md[0] = 1; md[1] = hs; md[2] = id < g ? in : hs;
  bd[0] = 1; bd[1] = hs; bd[2] = 1;
  return status("cudnnGetRNNWeightParams");
}
int cudnnRNNForward(void *h, void *d, int fwd, const int *lens, void *xd, const void *x, void *yd, void *y, void *hd,
                    const void *hx, void *hy, void *cd, const void *cx, void *cy, size_t wbytes, const void *w,
                    size_t work_bytes, void *work, size_t reserve_bytes, void *reserve) {
  say("cudnnRNNForward fwd=%d lengths=%p x=%p y=%p hx=%p hy=%p cx=%p cy=%p weights=%zu@%p work=%zu@%p reserve=%zu@%p",
      fwd, lens, x, y, hx, hy, cx, cy, wbytes, w, work_bytes, work, reserve_bytes, reserve);
  return status("cudnnRNNForward");
}
int cudnnRNNBackwardData_v8(void *h, void *d, const int *lens, void *yd, const void *y, const void *dy, void *xd,
                            void *dx, void *hd, const void *hx, const void *dhy, void *dhx, void *cd, const void *cx,
                            const void *dcy, void *dcx, size_t wbytes, const void *w, size_t work_bytes, void *work,
                            size_t reserve_bytes, void *reserve) {
  say("cudnnRNNBackwardData_v8 lengths=%p dy=%p dx=%p dhy=%p dhx=%p dcy=%p dcx=%p weights=%zu@%p work=%zu@%p "
      "reserve=%zu@%p", lens, dy, dx, dhy, dhx, dcy, dcx, wbytes, w, work_bytes, work, reserve_bytes, reserve);
  return status("cudnnRNNBackwardData_v8");
}
int cudnnRNNBackwardWeights_v8(void *h, void *d, int add, const int *lens, void *xd, const void *x, void *hd,
                               const void *hx, void *yd, const void *y, size_t wbytes, void *dw, size_t work_bytes,
                               void *work, size_t reserve_bytes, void *reserve) {
  say("cudnnRNNBackwardWeights_v8 add=%d lengths=%p x=%p hx=%p y=%p dweights=%zu@%p work=%zu@%p reserve=%zu@%p",
      add, lens, x, hx, y, wbytes, dw, work_bytes, work, reserve_bytes, reserve);
  return status("cudnnRNNBackwardWeights_v8");
}
