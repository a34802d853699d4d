import gradcli as torch
import numpy as np
class sqrt_and_inverse(torch.autograd.Function):
    def forward(self, input_x): #input_x是一个tensor，不再是一个标量
        self.save_for_backward(input_x)
        output=torch.sum(torch.sqrt(torch.pow(input_x,2)-1)) # 函数z
        return output
    def backward(self, grad_output):
        print("---------------------------------------------")
        print(f"grad_output is : {grad_output}")
        input_x,=self.saved_variables #input_x前面的逗号是不能丢的
        grad_x = grad_output *(torch.div(input_x,torch.sqrt(torch.pow(input_x,2)-1)))
        return grad_x
def sqrt_and_inverse_func(input_x):
    return sqrt_and_inverse().forward(input_x) # 不是对象调用了
x=torch.tensor([2.0,3.0,4.0],requires_grad=True) #tensor
print('开始前向传播')
z=sqrt_and_inverse_func(x)
print('开始反向传播')
z.backward()
print(x.grad)
'''
开始前向传播
开始反向传播
tensor([1.1547, 1.0607, 1.0328])
'''
