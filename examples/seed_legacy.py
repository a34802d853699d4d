"""Seed 002: the legacy instance style (forward(self, ...), called as Fn()(...)).

gradcli still checks it and prints how to migrate. The first Function needs x > 0 (sqrt, 1/x)
and the second |x| > 1 (sqrt(x*x - 1)): the automatic inputs find those domains themselves.
"""
import gradcli as torch


class SqrtAndInverse(torch.autograd.Function):
    """z = sqrt(x) + 1/x + 2*y**2."""

    def forward(self, input_x, input_y):
        self.save_for_backward(input_x, input_y)
        output = torch.sqrt(input_x) + torch.reciprocal(input_x) + 2 * torch.pow(input_y, 2)
        return output

    def backward(self, grad_output):
        input_x, input_y = self.saved_tensors
        grad_x = grad_output * (torch.reciprocal(2 * torch.sqrt(input_x)) - torch.reciprocal(torch.pow(input_x, 2)))
        grad_y = grad_output * (4 * input_y)
        return grad_x, grad_y


class SqrtXSquaredMinusOne(torch.autograd.Function):
    """z = sum(sqrt(x*x - 1))."""

    def forward(self, input_x):
        self.save_for_backward(input_x)
        output = torch.sum(torch.sqrt(torch.pow(input_x, 2) - 1))
        return output

    def backward(self, grad_output):
        (input_x,) = self.saved_variables
        grad_x = grad_output * (torch.div(input_x, torch.sqrt(torch.pow(input_x, 2) - 1)))
        return grad_x
