; Memory points (-det-sched-points=memory): a countdown of the point budget
; (det_cc_tls[1]) before every load and store that may touch shared
; memory; none for what is provably the thread's own.
; RUN: %opt-det -det-sched-points=memory -det-ticks=false %s | FileCheck %s
; Without the option, plain accesses get no points.
; RUN: %opt-det -det-ticks=false %s | FileCheck %s --check-prefix=NONE

@shared = global i32 0
@table = constant [2 x i32] [i32 1, i32 2]
@mine = thread_local global i32 0

declare void @escape(ptr)

; CHECK: @det_cc_built_memory = linkonce_odr constant i32 2
; NONE-NOT: det_cc_slow_local

define i32 @accesses(i32 %i) {
; CHECK-LABEL: @accesses(
; a local that never escapes: no point
; CHECK: store i32 1, ptr %local
; a global: a point before the load and before the store
; CHECK: getelementptr inbounds i64, ptr {{%.*}}, i64 1
; CHECK: call void @det_cc_slow_local(i32 1)
; CHECK: load i32, ptr @shared
; CHECK: call void @det_cc_slow_local(i32 1)
; CHECK: store i32 {{%.*}}, ptr @shared
; a constant, and a thread_local: no point
; CHECK-NOT: det_cc_slow_local
; CHECK: %t = load i32, ptr %tp
; CHECK-NOT: det_cc_slow_local
; CHECK: %m = load i32, ptr %mp
; a local whose address escapes: a point
; CHECK: call void @escape(ptr %out)
; CHECK: call void @det_cc_slow_local(i32 1)
; CHECK: load i32, ptr %out
; CHECK: ret i32
  %local = alloca i32
  %out = alloca i32
  store i32 1, ptr %local
  %l = load i32, ptr %local
  %s = load i32, ptr @shared
  %s1 = add i32 %s, %l
  store i32 %s1, ptr @shared
  %tp = getelementptr [2 x i32], ptr @table, i32 0, i32 %i
  %t = load i32, ptr %tp
  %mp = call ptr @llvm.threadlocal.address.p0(ptr @mine)
  %m = load i32, ptr %mp
  call void @escape(ptr %out)
  %o = load i32, ptr %out
  %r1 = add i32 %t, %m
  %r = add i32 %r1, %o
  ret i32 %r
}

declare ptr @llvm.threadlocal.address.p0(ptr)
