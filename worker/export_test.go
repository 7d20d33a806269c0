package worker

// ProcessCPU is processCPU, for the benchmarks of package worker_test.
var ProcessCPU = processCPU
