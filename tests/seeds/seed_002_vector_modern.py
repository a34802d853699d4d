# Seed 002, example 2.2 and the pitfall of 2.4, in the modern style. Calling forward directly
# (with a bare context) runs the ops inside it, which autograd differentiates by itself: the
# custom backward never runs, and the numbers are the same. Runs unchanged under real torch too.
import gradcli as torch
from gradcli.autograd import Function
from gradcli.autograd.function import FunctionCtx

backward_calls = []


class SqrtAndInverse(Function):
    @staticmethod
    def forward(ctx, input_x):
        ctx.save_for_backward(input_x)
        return torch.sum(torch.sqrt(torch.pow(input_x, 2) - 1))

    @staticmethod
    def backward(ctx, grad_output):
        backward_calls.append(grad_output.item())
        input_x, = ctx.saved_tensors
        return grad_output * (torch.div(input_x, torch.sqrt(torch.pow(input_x, 2) - 1)))


x = torch.tensor([2.0, 3.0, 4.0], requires_grad=True)
SqrtAndInverse.apply(x).backward()
print(x.grad, "backward calls:", backward_calls)

x = torch.tensor([2.0, 3.0, 4.0], requires_grad=True)
SqrtAndInverse.forward(FunctionCtx(), x).backward()
print(x.grad, "backward calls:", backward_calls)
