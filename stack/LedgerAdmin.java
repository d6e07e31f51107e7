// The few admin requests librdkafka's Node binding does not expose (ACLs, topic configs), through Kafka's
// own Java AdminClient from the local stack's Maven-resolved jars. Run by src/stack/jvm-admin.ts as a
// single-file program (java -cp '<kafka libs>/*' LedgerAdmin.java ...); never by hand.
//
//   LedgerAdmin <bootstrap> <client.properties|-> create-acls <acls.json>
//   LedgerAdmin <bootstrap> <client.properties|-> describe-configs <topic> [name ...]   (prints JSON)
//   LedgerAdmin <bootstrap> <client.properties|-> alter-configs <topic> <name=value> ...
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.FileInputStream;
import java.io.File;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.acl.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.resource.*;

public class LedgerAdmin {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    if (!args[1].equals("-")) try (FileInputStream in = new FileInputStream(args[1])) { props.load(in); }
    props.put("bootstrap.servers", args[0]);
    props.put("request.timeout.ms", "20000");
    props.put("default.api.timeout.ms", "60000");
    ObjectMapper json = new ObjectMapper();
    try (Admin admin = Admin.create(props)) {
      switch (args[2]) {
        case "create-acls": {
          List<AclBinding> bindings = new ArrayList<>();
          for (JsonNode a : json.readTree(new File(args[3]))) {
            bindings.add(new AclBinding(
                new ResourcePattern(ResourceType.valueOf(a.get("resourceType").asText()), a.get("name").asText(), PatternType.valueOf(a.get("pattern").asText())),
                new AccessControlEntry(a.get("principal").asText(), "*", AclOperation.valueOf(a.get("operation").asText()), AclPermissionType.ALLOW)));
          }
          admin.createAcls(bindings).all().get();
          System.out.println(bindings.size());
          break;
        }
        case "describe-configs": {
          ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, args[3]);
          Config c = admin.describeConfigs(List.of(r)).all().get().get(r);
          Set<String> names = new HashSet<>(Arrays.asList(args).subList(4, args.length));
          Map<String, String> out = new TreeMap<>();
          for (ConfigEntry e : c.entries()) if (names.isEmpty() || names.contains(e.name())) out.put(e.name(), e.value());
          System.out.println(json.writeValueAsString(out));
          break;
        }
        case "alter-configs": {
          ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, args[3]);
          List<AlterConfigOp> ops = new ArrayList<>();
          for (String kv : Arrays.asList(args).subList(4, args.length)) {
            int i = kv.indexOf('=');
            ops.add(new AlterConfigOp(new ConfigEntry(kv.substring(0, i), kv.substring(i + 1)), AlterConfigOp.OpType.SET));
          }
          admin.incrementalAlterConfigs(Map.of(r, ops)).all().get();
          break;
        }
        default:
          throw new IllegalArgumentException("unknown command " + args[2]);
      }
    }
  }
}
