/*
 * switch.S — arch_context_switch(save, load): push the callee-saved
 * registers on the current stack, store the stack pointer in save->esp,
 * load load->esp and pop the other thread's registers. The return address
 * on the new stack takes us back into that thread's schedule() — or, for a
 * new thread, to the entry that arch_context_init placed there.
 */
	.text
	.global arch_context_switch
	/* A function to the symbol table (type and size), so fbt can take
	 * it: the one call that returns on another stack (callstacks.py). */
	.type	arch_context_switch, @function
arch_context_switch:
	movl	4(%esp), %eax       /* save */
	movl	8(%esp), %edx       /* load */
	pushl	%ebp
	pushl	%ebx
	pushl	%esi
	pushl	%edi
	movl	%esp, (%eax)
	movl	(%edx), %esp
	popl	%edi
	popl	%esi
	popl	%ebx
	popl	%ebp
	ret
	.size	arch_context_switch, . - arch_context_switch
