"""Framing: windowed overlap-add by F.fold and by index_add_, an audio-codec codebook lookup by
integer codes (with repeats), and a learned mask embedding for time-masked spectrogram frames."""
import torch
import torch.nn.functional as F

N_WIN, HOP = 4, 2


def _ola_inputs():
    gen = torch.Generator().manual_seed(51)
    frames = torch.randn(2, 4, N_WIN, dtype=torch.float64, generator=gen)  # F = N on purpose
    window = 0.5 + torch.rand(N_WIN, dtype=torch.float64, generator=gen)
    return frames, window


def _fold_forward(ctx, frames, window):
    batch, n_frames, n = frames.shape
    length = (n_frames - 1) * HOP + n
    ctx.save_for_backward(frames, window)
    ctx.length = length
    cols = (frames * window).transpose(1, 2)  # (B, N, F)
    return F.fold(cols, output_size=(1, length), kernel_size=(1, n), stride=(1, HOP)).view(batch, length)


class FurtherOverlapAddFold(torch.autograd.Function):
    """y = overlap-add of window * frames, hop 2, by F.fold."""
    bug = None

    @staticmethod
    def forward(ctx, frames, window):
        return _fold_forward(ctx, frames, window)

    @staticmethod
    def backward(ctx, grad):
        frames, window = ctx.saved_tensors
        batch, n_frames, n = frames.shape
        cols = F.unfold(grad.view(batch, 1, 1, ctx.length), kernel_size=(1, n), stride=(1, HOP))
        g_windowed = cols.transpose(1, 2)
        return g_windowed * window, (g_windowed * frames).sum(dim=(0, 1))

    @staticmethod
    def example_inputs():
        return _ola_inputs()


class FurtherOverlapAddFoldNoTranspose(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "frames",
           "note": "F.unfold gives (B, N, F); it is reshaped to (B, F, N) instead of transposed back", "also": ["transposed"]}

    @staticmethod
    def forward(ctx, frames, window):
        return _fold_forward(ctx, frames, window)

    @staticmethod
    def backward(ctx, grad):
        frames, window = ctx.saved_tensors
        batch, n_frames, n = frames.shape
        cols = F.unfold(grad.view(batch, 1, 1, ctx.length), kernel_size=(1, n), stride=(1, HOP))
        g_windowed = cols.reshape(batch, n_frames, n)  # BUG
        return g_windowed * window, (g_windowed * frames).sum(dim=(0, 1))

    @staticmethod
    def example_inputs():
        return _ola_inputs()


class FurtherOverlapAddFoldWindowSum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "window",
           "note": "the window's gradient is summed over batch and samples (0, 2) instead of batch and frames (0, 1)"}

    @staticmethod
    def forward(ctx, frames, window):
        return _fold_forward(ctx, frames, window)

    @staticmethod
    def backward(ctx, grad):
        frames, window = ctx.saved_tensors
        batch, n_frames, n = frames.shape
        cols = F.unfold(grad.view(batch, 1, 1, ctx.length), kernel_size=(1, n), stride=(1, HOP))
        g_windowed = cols.transpose(1, 2)
        return g_windowed * window, (g_windowed * frames).sum(dim=(0, 2))  # BUG

    @staticmethod
    def example_inputs():
        return _ola_inputs()


def _ola_index(n_frames, n):
    return (torch.arange(n_frames)[:, None] * HOP + torch.arange(n)[None, :]).reshape(-1)


def _index_forward(ctx, frames, window):
    batch, n_frames, n = frames.shape
    ctx.save_for_backward(frames, window)
    out = frames.new_zeros(batch, (n_frames - 1) * HOP + n)
    return out.index_add_(1, _ola_index(n_frames, n), (frames * window).reshape(batch, -1))


class FurtherOverlapAddIndex(torch.autograd.Function):
    """The same overlap-add by index_add_; backward gathers the frames back."""
    bug = None

    @staticmethod
    def forward(ctx, frames, window):
        return _index_forward(ctx, frames, window)

    @staticmethod
    def backward(ctx, grad):
        frames, window = ctx.saved_tensors
        batch, n_frames, n = frames.shape
        index = _ola_index(n_frames, n)[None, :].expand(batch, -1)
        g_windowed = grad.gather(1, index).view(batch, n_frames, n)
        g_window = (g_windowed * frames).sum(dim=(0, 1)) if ctx.needs_input_grad[1] else None
        return g_windowed * window, g_window

    @staticmethod
    def example_inputs():
        return _ola_inputs()


class FurtherOverlapAddIndexFixedWindow(torch.autograd.Function):
    bug = {"kind": "zero", "input": "window",
           "note": "the window is treated as a fixed buffer and gets no gradient although it is learned"}

    @staticmethod
    def forward(ctx, frames, window):
        return _index_forward(ctx, frames, window)

    @staticmethod
    def backward(ctx, grad):
        frames, window = ctx.saved_tensors
        batch, n_frames, n = frames.shape
        index = _ola_index(n_frames, n)[None, :].expand(batch, -1)
        g_windowed = grad.gather(1, index).view(batch, n_frames, n)
        g_window = None  # BUG
        return g_windowed * window, g_window

    @staticmethod
    def example_inputs():
        return _ola_inputs()


def _codebook_inputs():
    gen = torch.Generator().manual_seed(52)
    codes = torch.tensor([[0, 2, 2, 4], [1, 2, 0, 0]], dtype=torch.int64)
    table = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    return codes, table


class FurtherCodebookLookup(torch.autograd.Function):
    """Codec token embedding: table[codes], codes (B, T) int64."""
    bug = None

    @staticmethod
    def forward(ctx, codes, table):
        ctx.save_for_backward(codes)
        ctx.num_codes = table.shape[0]
        return table[codes]

    @staticmethod
    def backward(ctx, grad):
        (codes,) = ctx.saved_tensors
        dim = grad.shape[-1]
        g_table = grad.new_zeros(ctx.num_codes, dim)
        g_table.scatter_add_(0, codes.reshape(-1, 1).expand(-1, dim), grad.reshape(-1, dim))
        return None, g_table

    @staticmethod
    def example_inputs():
        return _codebook_inputs()


class FurtherCodebookLookupScatter(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "table",
           "note": "scatter_ instead of scatter_add_: a code used several times keeps one position's gradient"}

    @staticmethod
    def forward(ctx, codes, table):
        ctx.save_for_backward(codes)
        ctx.num_codes = table.shape[0]
        return table[codes]

    @staticmethod
    def backward(ctx, grad):
        (codes,) = ctx.saved_tensors
        dim = grad.shape[-1]
        g_table = grad.new_zeros(ctx.num_codes, dim)
        g_table.scatter_(0, codes.reshape(-1, 1).expand(-1, dim), grad.reshape(-1, dim))  # BUG
        return None, g_table

    @staticmethod
    def example_inputs():
        return _codebook_inputs()


class FurtherCodebookLookupAssign(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "table",
           "note": "g_table[codes] = grad assigns rows, so repeated codes overwrite each other"}

    @staticmethod
    def forward(ctx, codes, table):
        ctx.save_for_backward(codes)
        ctx.num_codes = table.shape[0]
        return table[codes]

    @staticmethod
    def backward(ctx, grad):
        (codes,) = ctx.saved_tensors
        dim = grad.shape[-1]
        g_table = grad.new_zeros(ctx.num_codes, dim)
        g_table[codes.reshape(-1)] = grad.reshape(-1, dim)  # BUG
        return None, g_table

    @staticmethod
    def example_inputs():
        return _codebook_inputs()


def _mask_inputs():
    gen = torch.Generator().manual_seed(53)
    spec = torch.randn(2, 4, 3, dtype=torch.float64, generator=gen)
    mask = torch.tensor([[True, False, False, True], [False, True, True, False]])
    fill = torch.randn(3, dtype=torch.float64, generator=gen)
    return spec, mask, fill


class FurtherMaskedFrameEmbed(torch.autograd.Function):
    """Time-masked frames (B, T) replaced by a learned embedding fill (K,)."""
    bug = None

    @staticmethod
    def forward(ctx, spec, mask, fill):
        ctx.save_for_backward(mask)
        return torch.where(mask[..., None], fill, spec)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        g_spec = grad.masked_fill(mask[..., None], 0.0)
        g_fill = (grad * mask[..., None]).sum(dim=(0, 1))
        return g_spec, None, g_fill

    @staticmethod
    def example_inputs():
        return _mask_inputs()


class FurtherMaskedFrameEmbedWrongSide(torch.autograd.Function):
    bug = {"kind": "region", "input": "spec",
           "note": "the spectrogram's gradient is zeroed on the unmasked frames (~mask) instead of the masked ones"}

    @staticmethod
    def forward(ctx, spec, mask, fill):
        ctx.save_for_backward(mask)
        return torch.where(mask[..., None], fill, spec)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        g_spec = grad.masked_fill(~mask[..., None], 0.0)  # BUG
        g_fill = (grad * mask[..., None]).sum(dim=(0, 1))
        return g_spec, None, g_fill

    @staticmethod
    def example_inputs():
        return _mask_inputs()


class FurtherMaskedFrameEmbedAllFrames(torch.autograd.Function):
    bug = {"kind": "region", "input": "fill",
           "note": "the fill embedding collects the gradient of every frame, not only of the masked ones"}

    @staticmethod
    def forward(ctx, spec, mask, fill):
        ctx.save_for_backward(mask)
        return torch.where(mask[..., None], fill, spec)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        g_spec = grad.masked_fill(mask[..., None], 0.0)
        g_fill = grad.sum(dim=(0, 1))  # BUG
        return g_spec, None, g_fill

    @staticmethod
    def example_inputs():
        return _mask_inputs()
