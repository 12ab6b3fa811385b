from client.mqadmin import main

raise SystemExit(main())
