# Seed 002, example 2.1, in the modern style (staticmethods, ctx, Fn.apply): the translation the
# legacy style's DeprecationWarning suggests. Runs unchanged under real torch too.
import gradcli as torch
from gradcli.autograd import Function


class SqrtAndInverse(Function):
    @staticmethod
    def forward(ctx, input_x, input_y):
        ctx.save_for_backward(input_x, input_y)
        output = torch.sqrt(input_x) + torch.reciprocal(input_x) + 2 * torch.pow(input_y, 2)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input_x, input_y = ctx.saved_tensors
        grad_x = grad_output * (torch.reciprocal(2 * torch.sqrt(input_x)) - torch.reciprocal(torch.pow(input_x, 2)))
        grad_y = grad_output * (4 * input_y)
        return grad_x, grad_y


x = torch.tensor(3.0, requires_grad=True)
y = torch.tensor(2.0, requires_grad=True)
z = SqrtAndInverse.apply(x, y)
print(z)
z.backward()
print(x.grad)
print(y.grad)

x = torch.tensor(3.0, requires_grad=True)
y = torch.tensor(2.0, requires_grad=True)
z = SqrtAndInverse.apply(x, y)
z.backward(torch.tensor(2.5))
print(x.grad)
print(y.grad)
