; In a shared library (PIC, not PIE) the budgets are not the library's own:
; the executable exports its det_cc_tls (det-cc links it so), and every
; det-cc module of the process counts into that one copy.
; RUN: %opt-det %s | FileCheck %s

; CHECK: @det_cc_tls = linkonce_odr thread_local(initialexec) global [2 x i64] zeroinitializer

define void @f() {
  ret void
}

!llvm.module.flags = !{!0}
!0 = !{i32 8, !"PIC Level", i32 2}
