# Which API tests run over the hal backend and the fake driver library (label `hal`): all of
# them except those of behaviour the driver library does not have or that the emulator alone
# decides. Each group says why; docs/hal.md §5 lists the groups.
set(_hal_excluded
  # IPC memory by key and host registration: no halShmem* / halHostRegister in hal.md.
  "IpcKey*" "HostRegister*"
  # NONE / READ grants, aclrtMemMapNoAccess and HOST grants on device memory: the driver offers
  # READWRITE only and no public driver exports halMemMapNoAccess (hal.md §3.3, §3.4).
  "Access*" "VaddrMapTest.MapNoAccessNeedsSetAccessBeforeUse"
  # Physical memory of a device the process has not opened: the driver's answer is not known
  # (hal.md §7), and the fake refuses it with INVALID_DEVICE as that section says.
  "VaddrMapTest.MisuseTable" "VaddrMapTest.AnotherDevicesHandleNeedsItsOwnReservation"
  "PhysicalPropertiesTest.LocationIdIsTheHandlesDevice" "QueryPointerAttrTest.*"
  "StatsJsonTest.CountsFollowAllocationsMappingsAndFrees" "Robustness*"
  # The emulator's managed-memory model where it depends on which device executes a copy:
  # drvMemcpy names no device, so the fake migrates nothing on copies and counts no device
  # faults (the rest of the managed tests run: allocation, advice, prefetch, attributes, CPU
  # faults, NUMA placement).
  "ManagedMigrationTest.*" "ManagedOversubscriptionTest.*" "ManagedReadCopyTest.Cpu*"
  "ManagedReadCopyTest.DeviceWrite*" "ManagedReadCopyTest.OneCpuWrite*"
  "ManagedAdviceTest.AccessedBy*" "ManagedAdviceTest.Preferred*" "ManagedAdviceTest.ReadMostly*"
  "ManagedConcurrencyTest.DeviceAndCpu*" "ManagedConcurrencyTest.PagePingPong*"
  "ManagedPrefetchTest.BatchSplits*" "ManagedPrefetchTest.RunsInStreamOrder"
  "ManagedPrefetchTest.ToAnotherDevice" "ManagedPrefetchTest.ToHostBrings*"
  "ManagedStatsRestart.*" "ManagedLeakTest.FinalizeReleases*"
  "ManagedNumaTest.HostWithoutNumaPlacesNothing"
  "ManagedAllocTest.OtherProductsAnswerNotSupported" "ManagedP2PMapProductTest.*"
  "ManagedPrefetchTest.VisibleDevicesRenumberTheLocations"
  "ForkThreadLimit.ManagedMemoryWithoutAFaultThreadIs207005"
  "ForkRestart.ChildRunsAWholeLifecycleWhileTheParentGoesOn"
  "StatsJsonTest.HasEveryRequiredKeyWithItsType"
  # The machine set up from ACLVMM_SOC / ACLVMM_DEVICE_COUNT / ACLVMM_DEVICE_MEMORY in the test's
  # own process: the driver reports the machine (hal.md §1.5), and the fake reads its
  # environment once, when it is loaded.
  "RuntimeEnv.*" "StreamConfigTest.*" "StreamAbortTest.ChecksInOrder"
  "VaddrNoUcReserveTest.FixedAddressReservationOnA3"
  "ForkRestart.NoUcReservationOfTheParentIsFreeInTheChild"
  "KernelRegistryProcess.WorksBeforeInitAndAfterFinalizeAndSurvivesFinalize"
  "PhysicalMallocTest.CapacityIsEnforcedAndReturnedOnFree"
  # The last aclrtResetDevice closes the device in the driver, which destroys its memory (hal.md
  # §2), and the test still unmaps it afterwards.
  "StreamTest.KernelTransformsDeviceMemory"
  # A copy running out of one reservation into the adjacent one: the emulator's page table
  # decides; the driver copies what the core's records allow.
  "MemcpyTest.CopiesRunOnIntoTheAdjacentReservation"
)
list(JOIN _hal_excluded ":" _hal_excluded_joined)
set(ACLVMM_HAL_API_FILTER "*-${_hal_excluded_joined}")
